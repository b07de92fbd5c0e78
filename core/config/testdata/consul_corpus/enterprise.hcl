# Enterprise and HCP settings a cairn node may inherit from a shared directory.
license_path = "/etc/consul.d/consul.hclic"
partition = "default"
read_replica = false

audit {
  enabled = true
  sink "My sink" {
    type               = "file"
    format             = "json"
    path               = "/var/log/consul/audit.json"
    delivery_guarantee = "best-effort"
    rotate_duration    = "24h"
    rotate_max_files   = 15
    rotate_bytes       = 25165824
  }
}

autopilot {
  redundancy_zone_tag = "zone"
}

cloud {
  resource_id   = "organization/0b9de9a3/project/4fb6ce1d/hashicorp.consul.cluster/prod"
  client_id     = "9ab9fa0f"
  client_secret = "b3b31c55"
}

snapshot_agent {
  snapshot {
    interval = "1h"
    retain   = 30
  }
}
