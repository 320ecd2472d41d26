-- register: adds a lean limit id to the registry, the sorted set of the ids
-- whose keys may still exist. An id's score is the server time (Unix ms)
-- until which a key of that id written now could live (its window or its
-- penalty block, with a margin); ids past their time are removed, so the set
-- never outgrows the limits in use, however often a policy was edited; and
-- the set itself expires with its last id, so nothing of a prefix outlives
-- its use. Scores only grow (GT): a store with a shorter lifetime for the
-- same id never shortens it.
--
-- KEYS[1]  the registry
-- ARGV[1]  the limit id
-- ARGV[2]  how long its keys may live, ms
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZADD', KEYS[1], 'GT', now + tonumber(ARGV[2]), ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. now)
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], last[2])
return 1
