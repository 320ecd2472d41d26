-- lean_gcra: checks of one GCRA limit each, in the limit's own key
-- "<identity key>:<limit id>", whose value is
--
--   <hits>:<theoretical arrival time>[,<end of a penalty block>]
--
-- (times in whole µs minus EPOCH) and whose TTL is when that state is back
-- to fresh, in whole seconds plus one (as check.lua's: a key of a limit far
-- from its rate is not created and expired on every check; a past tat reads
-- as fresh): GET, TIME, SET ... PX, no spec to parse. It mirrors gcra.lua and
-- the driver's block handling (check.lua), which reads and writes the same
-- key for a GCRA limit of a multi-limit check (algorithm 6). A test clock
-- never comes here. (A TTL passed as a Lua number is written %.14g: whole
-- milliseconds below 10^14, some 3000 years, are exact.)
--
-- KEYS[k]  the key of check k
-- ARGV[1]  number of checks; then per check: cost (> 0), interval µs
--          (period / rate), capacity, block µs (0 = none)
-- Returns 5 integers per check: allowed, remaining, reset µs, retry µs,
-- blocked.
local EPOCH = 1750000000000000
local ceil, floor, tonumber, match, fmt = math.ceil, math.floor, tonumber, string.match, string.format
-- Hits stop at 2^53 (exact in a double, written by %d without overflow),
-- however large the costs: a cost near 2^63 would otherwise write a value
-- that reads back as fresh state, forgetting a block in force.
local HITS_MAX = 9007199254740992
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]

local function check(key, i)
  local cost, interval, capacity, block = tonumber(ARGV[i]), tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3])
  local raw = redis.pcall('GET', key)
  local hits, a, x = 0, 0, 0
  if type(raw) == 'string' then
    local h, ta, xb = match(raw, '^(%d+):(%-?%d+),?(%-?%d*)$')
    if h then
      hits, a = tonumber(h), tonumber(ta) + EPOCH
      if xb ~= '' then x = tonumber(xb) + EPOCH end
    end
  end
  if x > now then
    local wait = ceil(x - now)
    return 0, 0, wait, wait, 1
  end
  local spent = hits + cost
  if spent > HITS_MAX then spent = HITS_MAX end
  local tolerance = interval * capacity
  local tat = a
  if tat < now then tat = now end
  local new_tat = ceil(tat + cost * interval)
  local diff = now - (new_tat - tolerance)
  if diff >= 0 then
    local ttl = new_tat - now
    redis.call('SET', key, fmt('%d:%d', spent, new_tat - EPOCH), 'PX', (ceil(ttl / 1000000) + 1) * 1000)
    return 1, floor(diff / interval), ttl, 0, 0
  end
  local retry = -diff
  if cost * interval > tolerance then retry = -1 end
  local remaining = floor((now - (tat - tolerance)) / interval)
  if remaining < 0 then remaining = 0 end
  local reset = tat - now
  if block <= 0 then
    if retry > 0 then retry = ceil(retry) end
    return 0, remaining, ceil(reset), retry, 0
  end
  -- Denied with a penalty block: the state as it was, and the block.
  local nx = now + block
  local keep = nx
  if a > keep then keep = a end
  local value = fmt('%d:%d,%d', spent, a - EPOCH, nx - EPOCH)
  redis.call('SET', key, value, 'PX', (ceil((keep - now) / 1000000) + 1) * 1000)
  if retry >= 0 and retry < block then retry = block end
  if reset < block then reset = block end
  if retry > 0 then retry = ceil(retry) end
  return 0, remaining, ceil(reset), retry, 1
end

if ARGV[1] == '1' then return {check(KEYS[1], 2)} end
local out = {}
for k = 0, tonumber(ARGV[1]) - 1 do
  local o = 5 * k
  out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5] = check(KEYS[k + 1], 4 * k + 2)
end
return out
