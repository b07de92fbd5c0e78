# A production Consul server, as the Consul deployment guide writes one.
datacenter = "dc1"
data_dir   = "/opt/consul"
node_name  = "consul-server-1"

server           = true
bootstrap_expect = 3

bind_addr   = "10.0.1.10"
client_addr = "0.0.0.0"
advertise_addr = "10.0.1.10"

retry_join = ["10.0.1.11", "10.0.1.12"]

encrypt = "pUqJrVyVRj5jsiYEkM/tFQYfWyJIv4s3XkvDwy7Cu5s="
encrypt_verify_incoming = true
encrypt_verify_outgoing = true

ui_config {
  enabled = true
}

performance {
  raft_multiplier = 1
}

log_level            = "INFO"
log_file             = "/var/log/consul/"
log_rotate_duration  = "24h"
log_rotate_max_files = 7

acl {
  enabled                  = true
  default_policy           = "deny"
  down_policy              = "extend-cache"
  enable_token_persistence = true
  tokens {
    agent = "3c8aaa8a-1a8b-4fba-b4e7-0d9eab2fd5ab"
  }
}

tls {
  defaults {
    ca_file         = "/etc/consul.d/certs/consul-agent-ca.pem"
    cert_file       = "/etc/consul.d/certs/dc1-server-consul-0.pem"
    key_file        = "/etc/consul.d/certs/dc1-server-consul-0-key.pem"
    verify_incoming = true
    verify_outgoing = true
  }
  internal_rpc {
    verify_server_hostname = true
  }
}

auto_encrypt {
  allow_tls = true
}

autopilot {
  cleanup_dead_servers      = true
  last_contact_threshold    = "200ms"
  max_trailing_logs         = 250
  server_stabilization_time = "10s"
}

connect {
  enabled = true
}

ports {
  https    = 8501
  grpc     = -1
  grpc_tls = 8503
}

telemetry {
  prometheus_retention_time = "30s"
  disable_hostname          = true
}

limits {
  http_max_conns_per_client = 400
  rpc_max_conns_per_client  = 100
}

dns_config {
  enable_truncate = true
  only_passing    = true
  service_ttl {
    "*" = "5s"
  }
}

primary_datacenter = "dc1"
disable_update_check = true
