# Service definition dropped into /etc/consul.d by a deploy job.
service {
  name = "web"
  id   = "web-1"
  port = 8080
  tags = ["v1", "primary"]

  meta {
    version = "1.4.2"
  }

  check {
    id       = "web-http"
    name     = "HTTP on 8080"
    http     = "http://localhost:8080/health"
    method   = "GET"
    header {
      Accept = ["application/json"]
    }
    interval = "10s"
    timeout  = "1s"
  }

  weights { passing = 10 warning = 1 }

  enable_tag_override = false

  connect {
    sidecar_service {}
  }
}
