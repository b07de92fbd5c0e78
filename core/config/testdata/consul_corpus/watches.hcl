watches = [
  {
    type         = "key"
    key          = "app/config"
    handler_type = "script"
    args         = ["/usr/bin/reload-app.sh"]
  },
  {
    type         = "service"
    service      = "web"
    handler_type = "http"
    http_handler_config {
      path            = "https://hooks.example.com/consul"
      method          = "POST"
      header          = { "x-token" = ["s3cr3t"] }
      timeout         = "10s"
      tls_skip_verify = false
    }
  },
]
