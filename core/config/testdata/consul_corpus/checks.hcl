# Node-level checks, one block each.
check {
  id       = "mem-util"
  name     = "Memory utilization"
  args     = ["/usr/local/bin/check_mem.py", "-limit", "256MB"]
  interval = "10s"
  timeout  = "1s"
}

check {
  id    = "disk"
  name  = "Disk space"
  ttl   = "5m"
  notes = "Pushed by the disk watcher cron job"
}
