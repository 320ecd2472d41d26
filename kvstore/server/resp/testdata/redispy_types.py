"""Drives devkit kv's hashes, lists, sets, sorted sets and a blocking pop
with Debian's python3-redis (redis-py).

Usage: python3 redispy_types.py HOST PORT. Prints one JSON object of
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

# Hashes: a session.
out["hset"] = r.hset("session:1", mapping={"user": "ann", "visits": "1"})
out["hincrby"] = r.hincrby("session:1", "visits", 5)
out["hgetall"] = r.hgetall("session:1")
out["hdel"] = r.hdel("session:1", "user", "nope")
out["type_hash"] = r.type("session:1")
try:
    r.lpush("session:1", "x")
    out["wrongtype"] = None
except redis.ResponseError as e:
    out["wrongtype"] = str(e)

# Lists: a queue, with a transaction.
with r.pipeline() as p:
    p.rpush("jobs", "j1", "j2", "j3").lpop("jobs").lrange("jobs", 0, -1)
    out["list_tx"] = p.execute()
out["lpop_count"] = r.lpop("jobs", 5)
out["lpop_missing"] = r.lpop("jobs")

# Sets: tags.
out["sadd"] = r.sadd("tags", "go", "redis", "go")
out["smembers"] = sorted(r.smembers("tags"))
out["sinter"] = sorted(r.sinter("tags", "nokey"))
out["spop"] = len(r.spop("tags", 10))
out["tags_exists"] = r.exists("tags")

# Sorted sets: a leaderboard and delayed jobs.
out["zadd"] = r.zadd("board", {"ann": 10, "bob": 20, "cid": 15})
out["zincrby"] = r.zincrby("board", 7.5, "ann")
out["zrevrange"] = r.zrevrange("board", 0, 1, withscores=True)
out["zrangebyscore"] = r.zrangebyscore("board", "-inf", "(17.5")
out["zrank"] = r.zrank("board", "bob")
out["zpopmin"] = r.zpopmin("board")

# A blocking pop woken by a push from another client.
result = {}


def worker():
    c = redis.Redis(host=host, port=port, decode_responses=True)
    result["blpop"] = c.blpop(["queue"], timeout=10)


t = threading.Thread(target=worker)
t.start()
time.sleep(0.3)
r.rpush("queue", "payload")
t.join(15)
out["blpop"] = list(result.get("blpop") or [])
out["blpop_timeout"] = r.blpop(["empty"], timeout=0.2)
out["bzpopmin_timeout"] = r.bzpopmin(["emptyz"], timeout=0.2)

print(json.dumps(out))
