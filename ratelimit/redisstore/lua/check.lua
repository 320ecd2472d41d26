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

-- Per limit i (1-based), flat arrays: the outcome, the old and next state.
local ok, rem, rst, rty, blk, ttl = {}, {}, {}, {}, {}, {}
local old, new = {}, {}
local all_allowed = true
for i = 1, n do
  local b = 4 + (i - 1) * 6
  local algorithm, rate, period = tonumber(ARGV[b + 1]), tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3])
  local capacity, block = tonumber(ARGV[b + 4]), tonumber(ARGV[b + 5])
  local j = 2 + (i - 1) * 4
  local sa, sb, sc, sx = tonumber(raw[j + 1]) or 0, tonumber(raw[j + 2]) or 0, tonumber(raw[j + 3]) or 0, tonumber(raw[j + 4]) or 0
  old[j + 1], old[j + 2], old[j + 3], old[j + 4] = sa, sb, sc, sx
  if sx > now then
    local wait = math.ceil(sx - now)
    ok[i], rem[i], rst[i], rty[i], blk[i], ttl[i] = false, 0, wait, wait, true, wait
    new[j + 1], new[j + 2], new[j + 3], new[j + 4] = sa, sb, sc, sx
  else
    local na, nb, nc
    ok[i], rem[i], rst[i], rty[i], na, nb, nc, ttl[i] = algorithms[algorithm](rate, period, capacity, sa, sb, sc, now, cost)
    new[j + 1], new[j + 2], new[j + 3], new[j + 4] = na, nb, nc, 0
    blk[i] = false
    if not ok[i] and cost > 0 and block > 0 then
      blk[i] = true
      new[j + 1], new[j + 2], new[j + 3], new[j + 4] = sa, sb, sc, now + block
      if rty[i] >= 0 then rty[i] = math.max(rty[i], block) end
      rst[i] = math.max(rst[i], block)
      ttl[i] = math.max(ttl[i], block)
    end
    rst[i] = math.ceil(rst[i])
    if rty[i] > 0 then rty[i] = math.ceil(rty[i]) end
  end
  if not ok[i] then all_allowed = false end
end

if not all_allowed and cost > 0 then
  -- Nothing is consumed: the limits that allowed report their state as is.
  for i = 1, n do
    if ok[i] then
      local b = 4 + (i - 1) * 6
      local j = 2 + (i - 1) * 4
      local _, r, t = algorithms[tonumber(ARGV[b + 1])](tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3]), tonumber(ARGV[b + 4]),
        old[j + 1], old[j + 2], old[j + 3], now, 0)
      rem[i], rst[i] = r, math.ceil(t)
    end
  end
end

if cost > 0 then
  local writes = {'n', hits + cost}
  local keep = 0
  for i = 1, n do
    if all_allowed or blk[i] then
      local j = 2 + (i - 1) * 4
      for k = 1, 4 do
        if new[j + k] ~= old[j + k] then
          writes[#writes + 1] = fields[j + k]
          writes[#writes + 1] = new[j + k]
        end
      end
      if ttl[i] > keep then keep = ttl[i] end
    end
  end
  -- Expiry in whole seconds, rounded up: most checks need no PEXPIRE.
  local want = math.ceil((now + keep) / 1000000) + 1
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
  out[#out + 1] = ok[i] and 1 or 0
  out[#out + 1] = rem[i]
  out[#out + 1] = rst[i]
  out[#out + 1] = rty[i]
  out[#out + 1] = blk[i] and 1 or 0
end
return out
