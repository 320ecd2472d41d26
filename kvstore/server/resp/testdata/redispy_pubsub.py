"""Drives devkit kv's pub/sub with Debian's python3-redis (redis-py).

Usage: python3 redispy_pubsub.py HOST PORT. Prints one JSON object of
results; the Go test compares them. Any exception fails (non-zero exit).
"""
import json
import sys
import threading
import time

import redis

host, port = sys.argv[1], int(sys.argv[2])
r = redis.Redis(host=host, port=port, decode_responses=True)
out = {}


def next_message(p, timeout=5.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = p.get_message(timeout=0.2)
        if m is not None:
            return {k: m[k] for k in ("type", "pattern", "channel", "data")}
    raise TimeoutError("no message")


p = r.pubsub()
p.subscribe("orders")
out["subscribed"] = next_message(p)
p.psubscribe("audit.*")
out["psubscribed"] = next_message(p)
out["numsub"] = r.pubsub_numsub("orders", "none")
out["numpat"] = r.pubsub_numpat()
out["channels"] = r.pubsub_channels()
out["published"] = [r.publish("orders", "o-1"), r.publish("audit.login", "a-1"), r.publish("nobody", "x")]
out["messages"] = [next_message(p), next_message(p)]

# A handler run by redis-py's worker thread.
got = []
ready = threading.Event()


def handler(m):
    got.append(m["data"])
    ready.set()


hp = r.pubsub()
hp.subscribe(**{"events": handler})
worker = hp.run_in_thread(sleep_time=0.05, daemon=True)
deadline = time.time() + 5
while r.pubsub_numsub("events")[0][1] != 1 and time.time() < deadline:
    time.sleep(0.02)
r.publish("events", "e-1")
ready.wait(5)
worker.stop()
worker.join(5)
hp.close()
out["handled"] = got

p.unsubscribe()
p.punsubscribe()
deadline = time.time() + 5
while (r.pubsub_numsub("orders")[0][1] or r.pubsub_numpat()) and time.time() < deadline:
    p.get_message(timeout=0.05)
out["after_unsubscribe"] = [r.publish("orders", "late"), r.publish("audit.x", "late")]
p.close()
print(json.dumps(out))
