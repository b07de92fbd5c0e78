#!/usr/bin/python3
"""Catalog, health and session checks with the python-consul client (Debian python3-consul 0.7.1).

Usage: /usr/bin/python3 catalog_compat.py <host> <port>
Exits 0 when every check passes; prints the failing check otherwise.
Names carry a random suffix so reruns against one agent do not collide.
"""
import sys
import threading
import time
import uuid

import consul


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    c = consul.Consul(host=host, port=port)
    sfx = uuid.uuid4().hex[:8]
    step = [""]

    def check(name):
        step[0] = name
        print("check:", name, flush=True)

    def wait_until(pred, what, timeout=10.0):
        deadline = time.time() + timeout
        while time.time() < deadline:
            v = pred()
            if v:
                return v
            time.sleep(0.05)
        raise AssertionError("timed out waiting for %s" % what)

    me = c.agent.self()
    node = me["Config"]["NodeName"]

    check("agent node is in the catalog with serfHealth (leader reconcile)")
    wait_until(lambda: c.catalog.node(node)[1], "node %s in catalog" % node)
    _, checks = c.health.node(node)
    serf = [x for x in checks if x["CheckID"] == "serfHealth"]
    assert serf and serf[0]["Status"] == "passing", checks
    assert serf[0]["Output"] == "Agent alive and reachable", serf
    _, services = c.catalog.services()
    assert "consul" in services, services

    check("service registration with a TTL check starts critical")
    svc = "web-%s" % sfx
    assert c.agent.service.register(svc, service_id=svc, address="127.0.0.1", port=8080, tags=["v1", "primary"], check=consul.Check.ttl("10s")) is True
    assert svc in c.agent.services()
    _, nodes = c.catalog.service(svc)
    assert [n["ServiceID"] for n in nodes] == [svc], nodes
    assert nodes[0]["ServicePort"] == 8080 and sorted(nodes[0]["ServiceTags"]) == ["primary", "v1"], nodes
    _, entries = c.health.service(svc)
    assert len(entries) == 1, entries
    svc_checks = [x for x in entries[0]["Checks"] if x["ServiceID"] == svc]
    assert svc_checks and svc_checks[0]["Status"] == "critical", entries
    _, passing = c.health.service(svc, passing=True)
    assert passing == [], passing

    check("check pass makes it passing")
    # python-consul 0.7.1's ttl_pass/ttl_fail send GET, which Consul >= 1.0
    # answers with 405 (writes are PUT-only); send the same call as a PUT.
    def ttl(verb, check_id, note=None):
        params = {"note": note} if note else {}
        return c.http.put(consul.base.CB.bool(), "/v1/agent/check/%s/%s" % (verb, check_id), params=params)

    assert ttl("pass", "service:%s" % svc, "ok") is True
    _, passing = c.health.service(svc, passing=True)
    assert len(passing) == 1, passing
    _, by_tag = c.health.service(svc, tag="primary")
    assert len(by_tag) == 1, by_tag
    _, by_tag = c.health.service(svc, tag="nope")
    assert by_tag == [], by_tag
    _, svc_checks = c.health.checks(svc)
    assert [x["Status"] for x in svc_checks] == ["passing"], svc_checks
    _, passing_state = c.health.state("passing")
    assert any(x["ServiceID"] == svc for x in passing_state), passing_state

    check("catalog register and deregister of an external node")
    ext = "ext-%s" % sfx
    assert c.catalog.register(ext, "192.0.2.10", service={"Service": "db-%s" % sfx, "Port": 5432}, check={"CheckID": "db-up", "Name": "db up", "Status": "passing", "ServiceID": "db-%s" % sfx}) is True
    _, nodes = c.catalog.nodes()
    assert ext in [n["Node"] for n in nodes], nodes
    _, info = c.catalog.node(ext)
    assert info["Node"]["Address"] == "192.0.2.10", info
    assert "db-%s" % sfx in info["Services"], info
    assert c.catalog.deregister(ext) is True
    _, info = c.catalog.node(ext)
    assert info is None, info

    check("blocking health query is woken by a registration from another thread")
    late = "late-%s" % sfx
    index, entries = c.health.service(late)
    assert entries == [], entries
    result = {}

    def blocker():
        t0 = time.time()
        idx, ent = c.health.service(late, index=index, wait="20s")
        result["idx"], result["entries"], result["took"] = idx, ent, time.time() - t0

    t = threading.Thread(target=blocker)
    t.start()
    time.sleep(0.5)
    assert t.is_alive(), "blocking query returned before any change: %r" % result
    c.agent.service.register(late, service_id=late, port=9000)
    t.join(15)
    assert not t.is_alive(), "blocking query was not woken"
    assert int(result["idx"]) > int(index), result
    assert [e["Service"]["ID"] for e in result["entries"]] == [late], result
    assert result["took"] < 10, result

    check("sessions: create, info, node, list, renew")
    s1 = c.session.create(name="py-%s" % sfx, ttl=30, lock_delay=0)
    _, info = c.session.info(s1)
    assert info["ID"] == s1 and info["Node"] == node, info
    assert info["TTL"] == "30s", info
    assert "serfHealth" in (info.get("NodeChecks") or info.get("Checks") or []), info
    _, sessions = c.session.node(node)
    assert s1 in [s["ID"] for s in sessions], sessions
    _, sessions = c.session.list()
    assert s1 in [s["ID"] for s in sessions], sessions
    renewed = c.session.renew(s1)
    assert renewed and renewed["ID"] == s1, renewed

    check("locks: acquire, contend, release, re-acquire")
    key = "locks/%s/leader" % sfx
    s2 = c.session.create(name="py2-%s" % sfx, lock_delay=0)
    assert c.kv.put(key, "one", acquire=s1) is True
    assert c.kv.put(key, "two", acquire=s2) is False
    _, data = c.kv.get(key)
    assert data["Session"] == s1 and data["Value"] == b"one", data
    assert data["LockIndex"] == 1, data
    assert c.kv.put(key, "one", release=s2) is False, "releasing with a session that does not hold the lock"
    assert c.kv.put(key, "one", release=s1) is True
    _, data = c.kv.get(key)
    assert "Session" not in data or not data["Session"], data
    assert c.kv.put(key, "two", acquire=s2) is True
    _, data = c.kv.get(key)
    assert data["Session"] == s2 and data["LockIndex"] == 2, data

    check("destroying the holder's session releases its lock")
    assert c.session.destroy(s2) is True
    _, data = c.kv.get(key)
    assert "Session" not in data or not data["Session"], data
    assert c.session.info(s2)[1] is None

    check("delete behaviour removes held keys when the session goes")
    s3 = c.session.create(behavior="delete", lock_delay=0)
    k3 = "locks/%s/ephemeral" % sfx
    assert c.kv.put(k3, "x", acquire=s3) is True
    assert c.session.destroy(s3) is True
    _, data = c.kv.get(k3)
    assert data is None, data

    check("a session bound to a critical check cannot be created")
    assert ttl("fail", "service:%s" % svc) is True
    try:
        c.session.create(checks=["serfHealth", "service:%s" % svc])
        raise AssertionError("session created with a critical check")
    except consul.ConsulException:
        pass

    check("deregister the services")
    # 0.7.1's agent.service.deregister is a GET too (405 on Consul >= 1.0).
    for sid in (svc, late):
        assert c.http.put(consul.base.CB.bool(), "/v1/agent/service/deregister/%s" % sid) is True
    wait_until(lambda: c.catalog.service(svc)[1] == [], "service gone from catalog")
    c.session.destroy(s1)
    print("ok", flush=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001 - report any failure with its step
        import traceback

        traceback.print_exc()
        print("FAILED:", e, flush=True)
        sys.exit(1)
