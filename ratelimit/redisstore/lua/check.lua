-- check: a batch of checks, each one identity with several limits,
-- all-or-nothing. A batch is what the pipelining workers gathered while the
-- previous one was in flight (or a single check): one script call, one TIME.
-- Nothing is consumed unless every limit of a check allows; a denying limit
-- with a penalty block records the block. Time is Redis's own (TIME) unless
-- a test clock passes it in.
--
-- State is one string per identity (the compact encoding documented in
-- codec.lua). The key expires by itself: its TTL is only ever extended, in
-- whole seconds, so most checks keep it (SET ... KEEPTTL).
--
-- KEYS[k]  the identity of check k (all in one hash slot)
-- ARGV[1]  now in microseconds, or 0 to use TIME
-- ARGV[2]  number of checks; then per check:
--          cost (0 = peek, writes nothing), number of limits, and per limit
--          one spec "id:algorithm:rate:period µs:capacity:block µs" (id: 5
--          characters); the checks of a batch mostly share their specs,
--          which are parsed once per call.
-- Returns 5 integers per limit of every check, in order: allowed,
-- remaining, reset µs, retry µs, blocked.
local function run(algorithm, rate, period, capacity, a, b, c, now, cost)
  if algorithm == 0 or algorithm == 5 then return fixed_window(rate, period, capacity, a, b, c, now, cost) end
  if algorithm == 6 then return gcra(rate, period, capacity, a, b, c, now, cost) end
  if algorithm == 1 then return sliding_window(rate, period, capacity, a, b, c, now, cost) end
  if algorithm == 2 then return token_bucket(rate, period, capacity, a, b, c, now, cost) end
  if algorithm == 4 then return sliding_log(rate, period, capacity, a, b, c, now, cost) end
  return gcra(rate, period, capacity, a, b, c, now, cost)
end

-- A GCRA limit in its own key (lean_gcra.lua): "<hits>:<tat>[,<block end>]".
local function read_lean_gcra(lk)
  local raw = redis.pcall('GET', lk)
  if type(raw) ~= 'string' then return 0, 0, 0 end
  local h, ta, xb = match(raw, '^(%d+):(%-?%d+),?(%-?%d*)$')
  if not h then return 0, 0, 0 end
  local x = 0
  if xb ~= '' then x = tonumber(xb) + 1750000000000000 end
  return tonumber(h), tonumber(ta) + 1750000000000000, x
end

-- Parsed specs by their text: {id, algorithm, rate, period, capacity, block}.
local specs = {}
local function spec_of(text)
  local sp = specs[text]
  if sp then return sp end
  local id, algorithm, rate, period, capacity, block = match(text, '^([^:]*):([^:]*):([^:]*):([^:]*):([^:]*):([^:]*)$')
  sp = {id, tonumber(algorithm), tonumber(rate), tonumber(period), tonumber(capacity), tonumber(block)}
  specs[text] = sp
  return sp
end

local now = tonumber(ARGV[1])
if now == 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local checks = tonumber(ARGV[2])
local out, o = {}, 0
local ai = 3
-- Scratch tables shared by the checks of the batch (fewer allocations).
-- Per limit i (0-based): spec lim[i+1]; outcome r[6i+1..6i+6] = allowed,
-- remaining, reset, retry, blocked, ttl; state st[8i+1..8i+8] = old a b c x,
-- next a b c x.
local lim, r, st, segs, exps, order, count = {}, {}, {}, {}, {}, {}, 0
-- Per limit i of algorithm 5 (a fixed window in its own key, lean_fw.lua):
-- lv[i+1] is its counter as stored (false for none), lm[i+1] whether it
-- carries MARK.
local lv, lm, lh = {}, {}, {}
local MARK, MARK_ARG = 1125899906842624, '1125899906842624'

for k = 1, checks do
  local key = KEYS[k]
  local cost, n = tonumber(ARGV[ai]), tonumber(ARGV[ai + 1])
  local base = ai + 2
  ai = base + n

  -- An old or foreign value (another type) reads as no state and is replaced.
  local raw = redis.pcall('GET', key)
  if type(raw) ~= 'string' then raw = nil end
  local hits
  hits, count = decode_state(raw, segs, exps, order, count)

  local all_allowed = true
  for i = 0, n - 1 do
    local sp = spec_of(ARGV[base + i])
    lim[i + 1] = sp
    local algorithm, rate, period, capacity, block = sp[2], sp[3], sp[4], sp[5], sp[6]
    local sa, sb, sc, sx
    if algorithm == 5 then
      -- The window's counter and TTL, the penalty key's TTL (lean_fw.lua).
      sa, sb, sc, sx = 0, 0, 0, 0
      local lk = key .. ':' .. sp[1]
      local v = tonumber(redis.pcall('GET', lk))
      lv[i + 1], lm[i + 1] = false, false
      if v then
        local ttl = redis.call('PTTL', lk)
        if ttl == -1 then
          -- No expiry yet (lean.go countPlain sets it after its INCRBY):
          -- the window starts now.
          redis.call('PEXPIRE', lk, fmt('%d', period / 1000))
          ttl = period / 1000
        end
        if ttl > 0 then
          if v >= MARK then v, lm[i + 1] = v - MARK, true end
          sa, sb, lv[i + 1] = v, now + ttl * 1000 - period, v
        end
      end
      if block > 0 then
        local bt = redis.call('PTTL', key .. '!' .. sp[1])
        if bt > 0 then sx = now + bt * 1000 end
      end
    elseif algorithm == 6 then
      sb, sc = 0, 0
      lh[i + 1], sa, sx = read_lean_gcra(key .. ':' .. sp[1])
    else
      sa, sb, sc, sx = decode_limit(algorithm, period, segs[sp[1]])
    end
    local allowed, remaining, reset, retry, blocked, ttl, na, nb, nc, nx
    if sx > now then
      local wait = ceil(sx - now)
      allowed, remaining, reset, retry, blocked, ttl = false, 0, wait, wait, true, wait
      na, nb, nc, nx = sa, sb, sc, sx
    else
      allowed, remaining, reset, retry, na, nb, nc, ttl = run(algorithm, rate, period, capacity, sa, sb, sc, now, cost)
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
    local p = i * 6
    r[p + 1], r[p + 2], r[p + 3], r[p + 4], r[p + 5], r[p + 6] = allowed, remaining, reset, retry, blocked, ttl
    local q = i * 8
    st[q + 1], st[q + 2], st[q + 3], st[q + 4], st[q + 5], st[q + 6], st[q + 7], st[q + 8] = sa, sb, sc, sx, na, nb, nc, nx
  end

  if not all_allowed and cost > 0 then
    -- Nothing is consumed: the limits that allowed report their state as is.
    for i = 0, n - 1 do
      if r[i * 6 + 1] then
        local sp = lim[i + 1]
        local q = i * 8
        local _, remaining, reset = run(sp[2], sp[3], sp[4], sp[5], st[q + 1], st[q + 2], st[q + 3], now, 0)
        r[i * 6 + 2], r[i * 6 + 3] = remaining, ceil(reset)
      end
    end
  end

  if cost > 0 then
    local keep = 0
    local segments = false
    for i = 0, n - 1 do
      local sp = lim[i + 1]
      local q = i * 8
      if sp[2] == 5 then
        local id = sp[1]
        local lk = key .. ':' .. id
        if all_allowed then
          if lv[i + 1] then
            redis.call('INCRBY', lk, fmt('%d', cost))
          else
            redis.call('DEL', lk) -- a foreign value or a counter without expiry
            redis.call('SET', lk, fmt('%d', cost), 'PX', fmt('%d', sp[4] / 1000))
          end
        elseif r[i * 6 + 5] and st[q + 4] <= now then
          -- A new penalty block: the penalty key, and MARK on the counter.
          redis.call('SET', key .. '!' .. id, 1, 'PX', fmt('%d', sp[6] / 1000))
          if lv[i + 1] and not lm[i + 1] then redis.call('INCRBY', lk, MARK_ARG) end
        end
      elseif sp[2] == 6 then
        -- lean_gcra.lua's value; a denial without a block writes nothing.
        local fresh_block = r[i * 6 + 5] and st[q + 4] <= now
        if all_allowed or fresh_block then
          local na, nx = st[q + 5], st[q + 8]
          -- Hits stop at 2^53, as in lean_gcra.lua: %d of a larger number
          -- would write a value that reads back as fresh state.
          local spent = min(lh[i + 1] + cost, 9007199254740992)
          local value
          if nx > 0 then
            value = fmt('%d:%d,%d', spent, na - 1750000000000000, nx - 1750000000000000)
          else
            value = fmt('%d:%d', spent, na - 1750000000000000)
          end
          local keep = max(na, nx) - now
          redis.call('SET', key .. ':' .. sp[1], value, 'PX', fmt('%d', (ceil(keep / 1000000) + 1) * 1000))
        end
      elseif all_allowed or r[i * 6 + 5] then
        segments = true
        local id = sp[1]
        if segs[id] == nil then
          count = count + 1
          order[count] = id
        end
        segs[id] = encode_limit(sp[2], sp[4], st[q + 5], st[q + 6], st[q + 7], st[q + 8])
        exps[id] = expiry_of(now, r[i * 6 + 6])
        if r[i * 6 + 6] > keep then keep = r[i * 6 + 6] end
      end
    end
    -- The TTL only grows, in whole seconds plus one: most checks keep it.
    -- A check of lean limits only writes no identity value of its own.
    if segments or raw then
      local ttl = -2
      if raw then ttl = redis.call('PTTL', key) end
      local key_exp = nil
      if ttl >= 0 then key_exp = expiry_of(now, ttl * 1000) end
      local value = encode_state(hits + cost, segs, exps, order, count, now, key_exp)
      if ttl >= 0 and ttl * 1000 >= keep then
        redis.call('SET', key, value, 'KEEPTTL')
      else
        local want = (ceil(keep / 1000000) + 1) * 1000
        if ttl > want then want = ttl end
        redis.call('SET', key, value, 'PX', want)
      end
    end
  end

  for i = 0, n - 1 do
    local p = i * 6
    out[o + 1] = r[p + 1] and 1 or 0
    out[o + 2] = r[p + 2]
    out[o + 3] = r[p + 3]
    out[o + 4] = r[p + 4]
    out[o + 5] = r[p + 5] and 1 or 0
    o = o + 5
  end
end
return out
