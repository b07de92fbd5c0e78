# A Consul 1.4-era server config: top-level TLS and ACL keys Consul has since
# moved into blocks, still accepted.
datacenter = "east"
data_dir = "/var/lib/consul"
server = true
bootstrap_expect = 3
start_join = ["10.1.0.5", "10.1.0.6"]
ui = true

acl_datacenter = "east"
acl_default_policy = "deny"
acl_down_policy = "extend-cache"
acl_master_token = "b1gs33cr3t"

ca_file = "/etc/consul/ca.pem"
cert_file = "/etc/consul/consul.pem"
key_file = "/etc/consul/consul-key.pem"
verify_incoming = true
verify_outgoing = true
verify_server_hostname = true

non_voting_server = false
raft_protocol = 3
disable_anonymous_signature = true
