#!/usr/bin/python3
"""Drive a cairn agent with the python-consul client (Debian python3-consul).

Usage: /usr/bin/python3 kv_compat.py <host> <port>
Exits 0 when every check passes; prints the failing check otherwise.
Every key lives under a fresh random prefix so reruns do not collide.
"""
import base64
import json
import sys
import threading
import time
import uuid

import consul
import requests


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    c = consul.Consul(host=host, port=port)
    base = "http://%s:%d" % (host, port)
    p = "py-%s/" % uuid.uuid4().hex[:8]
    step = [""]

    def check(name):
        step[0] = name
        print("check:", name, flush=True)

    check("status leader and peers")
    leader = c.status.leader()
    assert leader, "no leader: %r" % leader
    assert isinstance(c.status.peers(), list)

    check("agent self")
    me = c.agent.self()
    assert me["Config"]["Datacenter"], me
    assert me["Config"]["NodeName"], me

    check("put and get")
    assert c.kv.put(p + "a", "hello") is True
    index, data = c.kv.get(p + "a")
    assert data["Value"] == b"hello", data
    assert data["Key"] == p + "a", data
    assert data["Flags"] == 0 and data["LockIndex"] == 0, data
    assert "Session" not in data, data
    assert int(index) > 0, index
    assert data["CreateIndex"] == data["ModifyIndex"], data

    check("missing key gives None and a usable index")
    index, data = c.kv.get(p + "missing")
    assert data is None, data
    assert int(index) > 0, index

    check("empty value reads back as None")
    assert c.kv.put(p + "empty", None) is True
    _, data = c.kv.get(p + "empty")
    assert data["Value"] is None, data

    check("flags")
    assert c.kv.put(p + "flagged", "v", flags=42) is True
    _, data = c.kv.get(p + "flagged")
    assert data["Flags"] == 42, data

    check("recurse")
    for k in ("dir/1", "dir/2", "dir/sub/3"):
        assert c.kv.put(p + k, k) is True
    _, items = c.kv.get(p + "dir/", recurse=True)
    assert [i["Key"] for i in items] == [p + "dir/1", p + "dir/2", p + "dir/sub/3"], items
    assert [i["Value"] for i in items] == [b"dir/1", b"dir/2", b"dir/sub/3"], items
    _, none = c.kv.get(p + "nothing/", recurse=True)
    assert none is None, none

    check("keys and separator")
    _, keys = c.kv.get(p + "dir/", keys=True)
    assert keys == [p + "dir/1", p + "dir/2", p + "dir/sub/3"], keys
    _, keys = c.kv.get(p + "dir/", keys=True, separator="/")
    assert keys == [p + "dir/1", p + "dir/2", p + "dir/sub/"], keys

    check("cas")
    assert c.kv.put(p + "cas", "first", cas=0) is True
    assert c.kv.put(p + "cas", "second", cas=0) is False
    _, data = c.kv.get(p + "cas")
    mi = data["ModifyIndex"]
    assert c.kv.put(p + "cas", "third", cas=mi + 1000) is False
    assert c.kv.put(p + "cas", "fourth", cas=mi) is True
    _, data = c.kv.get(p + "cas")
    assert data["Value"] == b"fourth", data
    assert data["ModifyIndex"] > mi, data

    check("delete, cas delete, recursive delete")
    assert c.kv.delete(p + "a") is True
    assert c.kv.get(p + "a")[1] is None
    _, data = c.kv.get(p + "cas")
    assert c.kv.delete(p + "cas", cas=data["ModifyIndex"] + 1000) is False
    assert c.kv.get(p + "cas")[1] is not None
    assert c.kv.delete(p + "cas", cas=data["ModifyIndex"]) is True
    assert c.kv.get(p + "cas")[1] is None
    assert c.kv.delete(p + "dir/", recurse=True) is True
    assert c.kv.get(p + "dir/", recurse=True)[1] is None

    check("binary value with all 256 byte values")
    blob = bytes(range(256))
    assert c.kv.put(p + "bin", blob) is True
    _, data = c.kv.get(p + "bin")
    assert data["Value"] == blob, data["Value"]
    raw = requests.get(base + "/v1/kv/" + p + "bin?raw")
    assert raw.status_code == 200 and raw.content == blob, raw.content

    check("key with spaces and unicode")
    key = p + "sp ace/été"
    assert c.kv.put(key, "u") is True
    assert c.kv.get(key)[1]["Key"] == key

    check("blocking get woken by a put from another thread")
    c.kv.put(p + "watch", "before")
    index, data = c.kv.get(p + "watch")

    def writer():
        time.sleep(0.5)
        consul.Consul(host=host, port=port).kv.put(p + "watch", "after")

    t = threading.Thread(target=writer)
    started = time.time()
    t.start()
    new_index, data = c.kv.get(p + "watch", index=index, wait="20s")
    took = time.time() - started
    t.join()
    assert data["Value"] == b"after", data
    assert int(new_index) > int(index), (index, new_index)
    assert 0.3 < took < 15, "blocking get returned after %.2fs" % took

    check("blocking get times out after wait with the same index")
    started = time.time()
    same_index, data = c.kv.get(p + "watch", index=new_index, wait="1s")
    took = time.time() - started
    assert data["Value"] == b"after", data
    assert int(same_index) == int(new_index), (new_index, same_index)
    assert 0.8 < took < 5, "timed-out blocking get took %.2fs" % took

    check("consistency modes")
    for mode in ("stale", "consistent"):
        r = requests.get(base + "/v1/kv/" + p + "watch?" + mode)
        assert r.status_code == 200, r.text
        assert r.headers["X-Consul-Effective-Consistency"] == mode, r.headers
    r = requests.get(base + "/v1/kv/" + p + "watch?stale&consistent")
    assert r.status_code == 400, r.status_code

    check("transaction")
    ops = [
        {"KV": {"Verb": "set", "Key": p + "t1", "Value": base64.b64encode(b"one").decode()}},
        {"KV": {"Verb": "set", "Key": p + "t2", "Value": base64.b64encode(b"two").decode()}},
        {"KV": {"Verb": "get", "Key": p + "watch"}},
    ]
    r = requests.put(base + "/v1/txn", data=json.dumps(ops))
    assert r.status_code == 200, (r.status_code, r.text)
    body = r.json()
    assert body["Errors"] is None, body
    assert [x["KV"]["Key"] for x in body["Results"]] == [p + "t1", p + "t2", p + "watch"], body
    assert base64.b64decode(body["Results"][2]["KV"]["Value"]) == b"after", body
    ops = [
        {"KV": {"Verb": "set", "Key": p + "t3", "Value": base64.b64encode(b"x").decode()}},
        {"KV": {"Verb": "check-not-exists", "Key": p + "t1"}},
    ]
    r = requests.put(base + "/v1/txn", data=json.dumps(ops))
    assert r.status_code == 409, (r.status_code, r.text)
    body = r.json()
    assert body["Results"] is None and body["Errors"][0]["OpIndex"] == 1, body
    assert c.kv.get(p + "t3")[1] is None, "rolled-back write is visible"

    check("bad requests are 400")
    try:
        c.kv.put(p + "x", "v", flags="abc")
        raise AssertionError("flags=abc was accepted")
    except consul.base.BadRequest:
        pass

    check("clean up")
    assert c.kv.delete(p, recurse=True) is True
    assert c.kv.get(p, recurse=True)[1] is None

    print("all python-consul checks passed", flush=True)


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        import traceback
        traceback.print_exc()
        print("FAILED:", e, file=sys.stderr)
        sys.exit(1)
