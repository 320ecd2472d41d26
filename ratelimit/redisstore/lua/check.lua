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
local function run(algorithm, rate, period, capacity, a, b, c, now, cost)
  if algorithm == 0 then return fixed_window(rate, period, capacity, a, b, c, now, cost) end
  if algorithm == 1 then return sliding_window(rate, period, capacity, a, b, c, now, cost) end
  if algorithm == 2 then return token_bucket(rate, period, capacity, a, b, c, now, cost) end
  return gcra(rate, period, capacity, a, b, c, now, cost)
end

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
  fields[3 + i * 4] = f .. 'a'
  fields[4 + i * 4] = f .. 'b'
  fields[5 + i * 4] = f .. 'c'
  fields[6 + i * 4] = f .. 'x'
end
local raw = redis.call('HMGET', key, unpack(fields))
local hits = tonumber(raw[1]) or 0
local expires = tonumber(raw[2]) or 0

-- Per limit i (0-based): outcome r[6i+1..6i+6] = allowed, remaining, reset,
-- retry, blocked, ttl; state st[8i+1..8i+8] = old a b c x, next a b c x.
local r, st = {}, {}
local all_allowed = true
for i = 0, n - 1 do
  local b = 4 + i * 6
  local rate, period = tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3])
  local capacity, block = tonumber(ARGV[b + 4]), tonumber(ARGV[b + 5])
  local j = 2 + i * 4
  local sa, sb, sc, sx = tonumber(raw[j + 1]) or 0, tonumber(raw[j + 2]) or 0, tonumber(raw[j + 3]) or 0, tonumber(raw[j + 4]) or 0
  local allowed, remaining, reset, retry, blocked, ttl, na, nb, nc, nx
  if sx > now then
    local wait = ceil(sx - now)
    allowed, remaining, reset, retry, blocked, ttl = false, 0, wait, wait, true, wait
    na, nb, nc, nx = sa, sb, sc, sx
  else
    allowed, remaining, reset, retry, na, nb, nc, ttl = run(tonumber(ARGV[b + 1]), rate, period, capacity, sa, sb, sc, now, cost)
    nx, blocked = 0, false
    if not allowed and cost > 0 and block > 0 then
      blocked = true
      na, nb, nc, nx = sa, sb, sc, now + block
      if retry >= 0 then retry = max(retry, block) end
      reset = max(reset, block)
      ttl = max(ttl, block)
    end
    reset = ceil(reset)
    if retry > 0 then retry = ceil(retry) end
  end
  if not allowed then all_allowed = false end
  local o = i * 6
  r[o + 1], r[o + 2], r[o + 3], r[o + 4], r[o + 5], r[o + 6] = allowed, remaining, reset, retry, blocked, ttl
  local q = i * 8
  st[q + 1], st[q + 2], st[q + 3], st[q + 4], st[q + 5], st[q + 6], st[q + 7], st[q + 8] = sa, sb, sc, sx, na, nb, nc, nx
end

if not all_allowed and cost > 0 then
  -- Nothing is consumed: the limits that allowed report their state as is.
  for i = 0, n - 1 do
    if r[i * 6 + 1] then
      local b = 4 + i * 6
      local q = i * 8
      local _, remaining, reset = run(tonumber(ARGV[b + 1]), tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3]), tonumber(ARGV[b + 4]),
        st[q + 1], st[q + 2], st[q + 3], now, 0)
      r[i * 6 + 2], r[i * 6 + 3] = remaining, ceil(reset)
    end
  end
end

if cost > 0 then
  local writes = {'n', hits + cost}
  local w = 2
  local keep = 0
  for i = 0, n - 1 do
    if all_allowed or r[i * 6 + 5] then
      local q = i * 8
      for k = 1, 4 do
        if st[q + 4 + k] ~= st[q + k] then
          writes[w + 1] = fields[2 + i * 4 + k]
          writes[w + 2] = st[q + 4 + k]
          w = w + 2
        end
      end
      if r[i * 6 + 6] > keep then keep = r[i * 6 + 6] end
    end
  end
  -- Expiry in whole seconds, rounded up: most checks need no PEXPIRE.
  local want = ceil((now + keep) / 1000000) + 1
  if want > expires then
    writes[w + 1] = 'e'
    writes[w + 2] = want
  end
  redis.call('HSET', key, unpack(writes))
  if want > expires then
    redis.call('PEXPIRE', key, ceil((want * 1000000 - now) / 1000))
  end
end

local out = {}
for i = 0, n - 1 do
  local o = i * 6
  out[i * 5 + 1] = r[o + 1] and 1 or 0
  out[i * 5 + 2] = r[o + 2]
  out[i * 5 + 3] = r[o + 3]
  out[i * 5 + 4] = r[o + 4]
  out[i * 5 + 5] = r[o + 5] and 1 or 0
end
return out
