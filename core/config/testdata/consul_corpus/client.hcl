// A client agent on an application host.
datacenter = "dc1"
data_dir = "/opt/consul"
node_name = "web-01"
bind_addr = "10.0.2.21"
client_addr = "127.0.0.1"

retry_join = [
  "10.0.1.10",
  "10.0.1.11",
  "10.0.1.12",
]
retry_interval = "15s"
rejoin_after_leave = true
leave_on_terminate = true

node_meta {
  rack = "r12"
  role = "web"
}

recursors = ["1.1.1.1", "8.8.8.8"]

dns_config {
  allow_stale = true
  max_stale   = "87600h"
  node_ttl    = "10s"
  service_ttl {
    "*"   = "5s"
    "web" = "30s"
  }
  udp_answer_limit = 3
  recursor_timeout = "2s"
  soa {
    min_ttl = 5
  }
}

ports {
  dns  = 8600
  http = 8500
}

addresses {
  dns = "127.0.0.1"
}

enable_local_script_checks = true
disable_remote_exec = true
disable_host_node_id = true
raft_protocol = 3

telemetry {
  statsd_address = "127.0.0.1:8125"
  metrics_prefix = "consul"
}

gossip_lan {
  probe_interval = "2s"
}
