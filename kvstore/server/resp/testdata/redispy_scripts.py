"""Drives devkit kv's scripting with Debian's python3-redis (redis-py).

Usage: python3 redispy_scripts.py HOST PORT. Prints one JSON object of
results; the Go test compares them. Any unexpected exception fails.
"""
import json
import sys

import redis

host, port = sys.argv[1], int(sys.argv[2])
r = redis.Redis(host=host, port=port, decode_responses=True)
out = {}

# register_script: EVALSHA, and EVAL on NOSCRIPT (redis-py's Script.__call__).
take = r.register_script("""
local left = tonumber(redis.call('get', KEYS[1]) or ARGV[1])
if left <= 0 then return {0, left} end
redis.call('set', KEYS[1], left - 1)
return {1, left - 1}
""")
out["first"] = take(keys=["tokens"], args=[3])
out["second"] = take(keys=["tokens"], args=[3])
out["cached"] = r.script_exists(take.sha)
r.script_flush()
out["after_flush"] = take(keys=["tokens"], args=[3])
out["drained"] = take(keys=["tokens"], args=[3])
out["empty"] = take(keys=["tokens"], args=[3])

# In a pipeline redis-py loads the script first (SCRIPT LOAD) then EVALSHA.
with r.pipeline() as p:
    take(keys=["p"], args=[2], client=p)
    take(keys=["p"], args=[2], client=p)
    out["pipeline"] = p.execute()

# Errors raised by the script reach the client as ResponseError.
boom = r.register_script("return redis.call('incr', KEYS[1])")
r.set("text", "abc")
try:
    boom(keys=["text"])
    out["error"] = None
except redis.exceptions.ResponseError as e:
    out["error"] = str(e)

out["json"] = r.eval("return cjson.encode({n = tonumber(ARGV[1])})", 0, 7)
out["status"] = r.eval("return redis.status_reply('FINE')", 0)
print(json.dumps(out))
