-- check: one identity, several limits, all-or-nothing.
-- Nothing is consumed unless every limit allows; a denying limit with a
-- penalty block records the block. Time is Redis's own (TIME) unless a test
-- clock passes it in. The key expires by itself once no state is needed:
-- field e holds the expiry (whole seconds of the script's clock) so that
-- PEXPIRE is sent only when it grows.
--
-- KEYS[1]  the identity's hash
-- ARGV[1]  now in microseconds, or 0 to use TIME
-- ARGV[2]  cost (0 = peek, writes nothing)
-- ARGV[3]  number of limits; then per limit 6 values:
--          field prefix, algorithm, rate, period µs, capacity, block µs
-- Only changed fields are written (absent reads as 0).
-- Returns 5 integers per limit: allowed, remaining, reset µs, retry µs, blocked.
local algorithms = {[0] = fixed_window, [1] = sliding_window, [2] = token_bucket, [3] = gcra}

local state_fields = {'a', 'b', 'c', 'x'}

local key = KEYS[1]
local now = tonumber(ARGV[1])
if now == 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local cost = tonumber(ARGV[2])
local n = tonumber(ARGV[3])

local fields = {'n', 'e'}
for i = 0, n - 1 do
  local f = ARGV[4 + i * 6]
  fields[#fields + 1] = f .. 'a'
  fields[#fields + 1] = f .. 'b'
  fields[#fields + 1] = f .. 'c'
  fields[#fields + 1] = f .. 'x'
end
local raw = redis.call('HMGET', key, unpack(fields))
local hits = tonumber(raw[1]) or 0
local expires = tonumber(raw[2]) or 0

local outcomes = {}
local all_allowed = true
for i = 0, n - 1 do
  local b = 4 + i * 6
  local p = {algorithm = tonumber(ARGV[b + 1]), rate = tonumber(ARGV[b + 2]), period = tonumber(ARGV[b + 3]),
             capacity = tonumber(ARGV[b + 4]), block = tonumber(ARGV[b + 5])}
  local s = {a = tonumber(raw[i * 4 + 3]) or 0, b = tonumber(raw[i * 4 + 4]) or 0,
             c = tonumber(raw[i * 4 + 5]) or 0, x = tonumber(raw[i * 4 + 6]) or 0}
  local o
  if s.x > now then
    local wait = math.ceil(s.x - now)
    o = {allowed = false, blocked = true, remaining = 0, reset = wait, retry = wait, next = s, ttl = wait}
  else
    o = algorithms[p.algorithm](p, s, now, cost)
    o.next.x = 0
    if not o.allowed and cost > 0 and p.block > 0 then
      o.blocked = true
      o.next = {a = s.a, b = s.b, c = s.c, x = now + p.block}
      if o.retry >= 0 then o.retry = math.max(o.retry, p.block) end
      o.reset = math.max(o.reset, p.block)
      o.ttl = math.max(o.ttl, p.block)
    end
    o.reset = math.ceil(o.reset)
    if o.retry > 0 then o.retry = math.ceil(o.retry) end
  end
  if not o.allowed then all_allowed = false end
  o.prev = s
  o.params = p
  outcomes[i + 1] = o
end

if not all_allowed and cost > 0 then
  -- Nothing is consumed: the limits that allowed report their state as is.
  for i = 1, n do
    local o = outcomes[i]
    if o.allowed then
      local peek = algorithms[o.params.algorithm](o.params, o.prev, now, 0)
      o.remaining = peek.remaining
      o.reset = math.ceil(peek.reset)
    end
  end
end

if cost > 0 then
  local writes = {'n', hits + cost}
  local ttl = 0
  for i = 0, n - 1 do
    local o = outcomes[i + 1]
    if all_allowed or o.blocked then
      local f = ARGV[4 + i * 6]
      for _, name in ipairs(state_fields) do
        if o.next[name] ~= o.prev[name] then
          writes[#writes + 1] = f .. name
          writes[#writes + 1] = o.next[name]
        end
      end
      if o.ttl > ttl then ttl = o.ttl end
    end
  end
  -- Expiry in whole seconds, rounded up: most checks need no PEXPIRE.
  local want = math.ceil((now + ttl) / 1000000) + 1
  if want > expires then
    writes[#writes + 1] = 'e'
    writes[#writes + 1] = want
  end
  redis.call('HSET', key, unpack(writes))
  if want > expires then
    redis.call('PEXPIRE', key, math.ceil((want * 1000000 - now) / 1000))
  end
end

local out = {}
for i = 1, n do
  local o = outcomes[i]
  out[#out + 1] = o.allowed and 1 or 0
  out[#out + 1] = o.remaining
  out[#out + 1] = o.reset
  out[#out + 1] = o.retry
  out[#out + 1] = o.blocked and 1 or 0
end
return out
