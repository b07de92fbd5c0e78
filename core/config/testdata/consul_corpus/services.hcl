/*
 * Several services in one file: repeated `services` blocks make a list.
 */
services {
  name = "api"
  port = 9090
  checks = [
    { id = "api-tcp", tcp = "localhost:9090", interval = "10s" },
    { id = "api-ttl", ttl = "30s", status = "passing" },
  ]
}

services {
  name = "billing"
  port = 7000
  tagged_addresses {
    lan { address = "10.0.2.21", port = 7000 }
    wan { address = "198.51.100.7", port = 17000 }
  }
  check {
    id     = "billing-post"
    http   = "http://localhost:7000/healthz"
    method = "POST"
    body   = <<EOF
{"probe": "consul"}
EOF
    interval = "30s"
    deregister_critical_service_after = "90m"
  }
}
