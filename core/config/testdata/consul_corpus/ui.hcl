ui_config {
  enabled          = true
  metrics_provider = "prometheus"
  metrics_provider_options_json = <<-EOT
    {
      "Prometheus": { "baseURL": "http://prometheus.example:9090" }
    }
  EOT
  metrics_proxy {
    base_url = "http://prometheus.example:9090"
  }
  dashboard_url_templates {
    service = "https://grafana.example/d/service?var-service={{Service.Name}}"
  }
}
