-- fast: the common check — one identity, one fixed-window or GCRA limit,
-- cost > 0, on a key that holds nothing or that limit alone — decided with
-- the fewest Lua operations, before the rest of the script defines its
-- functions (a local function is a closure created on every call: ~2 µs).
-- It writes exactly what check.lua writes for the same call (the contract
-- and differential suites run through it), and returns nothing for any
-- other call or value, which then goes on to the general driver below.
local function fast()
  local A = ARGV
  if A[2] ~= '1' or A[4] ~= '1' then return nil end
  local cost = tonumber(A[3])
  if not cost or cost <= 0 then return nil end
  local match = string.match
  local id, algorithm, rate, period, block = match(A[5], '^(.....):([03]):([^:]*):([^:]*):[^:]*:([^:]*)$')
  if not id then return nil end
  local gcra = algorithm == '3'
  rate, period, block = tonumber(rate), tonumber(period), tonumber(block)
  local capacity
  if gcra then capacity = tonumber(match(A[5], '^[^:]*:[^:]*:[^:]*:[^:]*:([^:]*)')) end

  local key = KEYS[1]
  local raw = redis.pcall('GET', key)
  local hits, old, f1, f2, f4 = 0, nil, '', '', ''
  if raw then
    if type(raw) ~= 'string' then return nil end
    local h, sid
    h, sid, old = match(raw, '^([^|]*)|(.....)([^|~]*)$')
    if sid ~= id then return nil end
    hits = tonumber(h)
    if not hits then return nil end
    f1, f2, f4 = match(old, '^([^,]*),?([^,]*),?[^,]*,?([^,]*)$')
    if not f1 then return nil end
  end

  local EPOCH = 1750000000000000
  local now = tonumber(A[1])
  if now == 0 then
    local t = redis.call('TIME')
    now = t[1] * 1000000 + t[2]
  end
  local x = 0
  if f4 ~= '' then x = tonumber(f4) + EPOCH end
  local a, b = 0, 0
  if gcra then
    if f1 ~= '' then a = tonumber(f1) + EPOCH end
  else
    if f1 ~= '' then a = tonumber(f1) end
    if f2 ~= '' then b = tonumber(f2) + EPOCH end
  end

  local ceil, max, floor = math.ceil, math.max, math.floor
  local allowed, remaining, reset, retry, blocked, ttl, na, nb, nx
  if x > now then
    local wait = ceil(x - now)
    allowed, remaining, reset, retry, blocked, ttl = false, 0, wait, wait, true, wait
    na, nb, nx = a, b, x
  else
    if gcra then
      -- gcra.lua
      local interval = period / rate
      local tolerance = interval * capacity
      local tat = max(a, now)
      local new_tat = ceil(tat + cost * interval)
      local diff = now - (new_tat - tolerance)
      if diff < 0 then
        retry = -diff
        if cost * interval > tolerance then retry = -1 end
        allowed, remaining, reset, na, ttl = false, max(0, floor((now - (tat - tolerance)) / interval)), tat - now, tat, tat - now
      else
        allowed, remaining, reset, retry, na, ttl = true, floor(diff / interval), new_tat - now, 0, new_tat, new_tat - now
      end
      nb = 0
    else
      -- fixed_window.lua
      local count, start = a, b
      if start == 0 or now >= start + period then count, start = 0, now end
      allowed = count + cost <= rate
      if allowed then count = count + cost end
      reset = start + period - now
      retry = 0
      if not allowed then
        retry = reset
        if cost > rate then retry = -1 end
      end
      remaining, na, nb, ttl = max(0, rate - count), count, start, reset
    end
    nx, blocked = 0, false
    if not allowed and block > 0 then
      blocked = true
      na, nb, nx = a, b, now + block
      if retry >= 0 then retry = max(retry, block) end
      reset = max(reset, block)
      ttl = max(ttl, block)
    end
    reset = ceil(reset)
    if retry > 0 then retry = ceil(retry) end
  end

  local fmt = string.format
  local seg
  local keep = 0
  if allowed or blocked then
    -- codec.lua encode_limit: empty fields for zeros, trailing ones left out.
    local s1, s2, s4 = '', '', ''
    if na ~= 0 then
      if gcra then s1 = fmt('%.17g', na - EPOCH) else s1 = fmt('%.17g', na) end
    end
    if nb ~= 0 then s2 = fmt('%.17g', nb - EPOCH) end
    if nx ~= 0 then s4 = fmt('%.17g', nx - EPOCH) end
    if s4 ~= '' then
      seg = s1 .. ',' .. s2 .. ',,' .. s4
    elseif s2 ~= '' then
      seg = s1 .. ',' .. s2
    else
      seg = s1
    end
    keep = ttl
  elseif raw then
    seg = old -- denied without a block: the state is kept as it is
  else
    return nil -- a fresh key denied: the driver writes the hits alone
  end
  local value = fmt('%.17g|', hits + cost) .. id .. seg
  -- The key lives at least until the end of the state it holds (every
  -- write keeps it that long, and its TTL only grows): when the new state
  -- ends no later, the driver's PTTL would only tell us to keep the TTL.
  if raw then
    local old_end
    if gcra then old_end = max(a, x) else old_end = max(b + period, x) end
    if now + keep <= old_end then
      redis.call('SET', key, value, 'KEEPTTL')
      return {allowed and 1 or 0, remaining, reset, retry, blocked and 1 or 0}
    end
  end
  local pttl = -2
  if raw then pttl = redis.call('PTTL', key) end
  if pttl >= 0 and pttl * 1000 >= keep then
    redis.call('SET', key, value, 'KEEPTTL')
  else
    local want = (ceil(keep / 1000000) + 1) * 1000
    if pttl > want then want = pttl end
    redis.call('SET', key, value, 'PX', want)
  end
  return {allowed and 1 or 0, remaining, reset, retry, blocked and 1 or 0}
end
local fast_reply = fast()
if fast_reply then return fast_reply end
