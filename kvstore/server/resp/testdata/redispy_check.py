"""Drives devkit kv's RESP listener with Debian's python3-redis (redis-py).

Usage: python3 redispy_check.py HOST PORT. Prints one JSON object of results;
the Go test compares them. Any exception fails (non-zero exit).
"""
import json
import sys
import threading
import time

import redis

host, port = sys.argv[1], int(sys.argv[2])
r = redis.Redis(host=host, port=port, decode_responses=True)
out = {}

out["ping"] = r.ping()
out["set"] = r.set("greeting", "hello")
out["get"] = r.get("greeting")

# A transactional pipeline (redis-py's default): MULTI ... EXEC.
with r.pipeline() as p:
    p.set("a", "1").incr("a").incrby("a", 10).get("a").delete("a", "missing")
    out["tx"] = p.execute()

# WATCH: a concurrent write aborts the transaction with WatchError.
r.set("balance", "10")
other = redis.Redis(host=host, port=port, decode_responses=True)
with r.pipeline() as p:
    p.watch("balance")
    n = int(p.get("balance"))
    other.set("balance", "100")
    p.multi()
    p.set("balance", n + 1)
    try:
        p.execute()
        out["watch"] = "applied"
    except redis.WatchError:
        out["watch"] = "aborted"
out["balance"] = r.get("balance")

# TTLs.
r.set("ttl", "v", ex=100)
out["ttl"] = r.ttl("ttl")
r.set("pttl", "v", px=2000)
out["pttl_ok"] = 1000 < r.pttl("pttl") <= 2000
out["persist"] = r.persist("ttl")
out["ttl_after_persist"] = r.ttl("ttl")
r.setex("short", 1, "v")
r.pexpire("short", 50)
time.sleep(0.15)
out["expired"] = r.get("short")
out["ttl_missing"] = r.ttl("short")

# Counters and conditional writes, exact under 50 threads.
def work():
    c = redis.Redis(host=host, port=port, decode_responses=True)
    for _ in range(20):
        c.incr("counter")
        c.incrbyfloat("float", 0.5)
        c.decrby("down", 2)
threads = [threading.Thread(target=work) for _ in range(50)]
for t in threads:
    t.start()
for t in threads:
    t.join()
out["counter"] = r.get("counter")
out["float"] = r.get("float")
out["down"] = r.get("down")
out["setnx"] = [r.setnx("once", "1"), r.setnx("once", "2")]
out["getset"] = r.getset("once", "3")
out["getdel"] = r.getdel("once")
out["append"] = r.append("log", "ab")
out["strlen"] = r.strlen("log")
out["type"] = r.type("log")
try:
    r.incr("greeting")
    out["incr_text"] = "no error"
except redis.ResponseError as e:
    out["incr_text"] = str(e)

print(json.dumps(out, sort_keys=True))
