-- The compact state encoding: one string per identity, short enough to be
-- stored inline by Redis (an embedded string up to 44 bytes):
--
--   <hits>|<id><fields>|<id><fields>...
--
-- hits is the cost requested since the state was created (for top). Each
-- limit is "|", its 5-character id, then up to four comma-separated fields,
-- trailing empty ones left out; an empty field is zero:
--
--   fixed window    count, window start
--   sliding window  previous count, current count, current window start / period
--   token bucket    tokens × 1024, last refill
--   GCRA            theoretical arrival time
--
-- and the fourth field is the end of a penalty block. Times are whole
-- microseconds minus EPOCH (2025-06-15), so they are two digits shorter.
-- The Go side (codec.go) reads the same format for info and top.
local EPOCH = 1750000000000000
local fmt, sub, find, match = string.format, string.sub, string.find, string.match

local function dec_num(s)
  if s == '' then return 0 end
  return tonumber(s)
end

local function dec_time(s)
  if s == '' then return 0 end
  return tonumber(s) + EPOCH
end

local function enc_num(v)
  if v == 0 then return '' end
  return fmt('%.17g', v)
end

local function enc_time(v)
  if v == 0 then return '' end
  return fmt('%.17g', v - EPOCH)
end

-- A limit's segment ends with "~" and the minute (since EPOCH_M, in base
-- 36: four characters) after which its state is back to fresh: a segment
-- past it is dropped when the value is written, so a limit that no policy
-- names any more (an edited policy) leaves no data behind once its window
-- has passed. Minutes, not seconds, keep the value within Redis's smallest
-- allocation for one limit.
local EPOCH_M = math.floor(EPOCH / 60000000)
local B36 = '0123456789abcdefghijklmnopqrstuvwxyz'
local function enc36(n)
  local s = ''
  repeat
    local d = n % 36
    s = sub(B36, d + 1, d + 1) .. s
    n = (n - d) / 36
  until n == 0
  return s
end

-- decode_state reads a stored value into segs (fields by limit id), exps
-- (expiry minute by limit id) and order (the ids in stored order, kept when
-- the value is written back), all emptied first (they are reused across the
-- checks of a batch), and returns the hits and the number of ids.
local function decode_state(raw, segs, exps, order, count)
  for i = 1, count do segs[order[i]], exps[order[i]] = nil, nil end
  if not raw then return 0, 0 end
  local p = find(raw, '|', 1, true)
  local hits = tonumber(sub(raw, 1, (p or 0) - 1)) or 0
  local k = 0
  while p do
    local q = find(raw, '|', p + 1, true)
    local id = sub(raw, p + 1, p + 5)
    local seg = sub(raw, p + 6, (q or 0) - 1)
    local t = find(seg, '~', 1, true)
    if t then
      exps[id] = tonumber(sub(seg, t + 1), 36)
      seg = sub(seg, 1, t - 1)
    end
    segs[id] = seg
    k = k + 1
    order[k] = id
    p = q
  end
  return hits, k
end

-- expiry_of is the expiry minute of a state kept for ttl µs from now.
local function expiry_of(now, ttl)
  return ceil((now + ttl) / 60000000) - EPOCH_M
end

local parts = {}
-- encode_state writes the value back, dropping stale segments. A value of
-- one segment needs no expiry (the key's TTL covers it); in a value of
-- several, a segment that has none (written while it was alone) gets the
-- key's current expiry, key_exp (a minute, or nil when unknown), which its
-- own can only precede.
local live = {}
local function encode_state(hits, segs, exps, order, count, now, key_exp)
  local m = 0
  for i = 1, count do
    local id = order[i]
    local e = exps[id]
    if e == nil or (e + EPOCH_M) * 60000000 > now then
      m = m + 1
      live[m] = id
    end
  end
  parts[1] = fmt('%.17g', hits)
  for i = 1, m do
    local id = live[i]
    local e = exps[id]
    if m == 1 then
      parts[i + 1] = '|' .. id .. segs[id]
    else
      if e == nil then e = key_exp end
      if e == nil then
        parts[i + 1] = '|' .. id .. segs[id]
      else
        parts[i + 1] = '|' .. id .. segs[id] .. '~' .. enc36(e)
      end
    end
  end
  return table.concat(parts, '', 1, m + 1)
end

-- A sliding log's first field is its times, space separated: the first
-- minus EPOCH, each next one as the difference to the one before.
local function decode_log(f)
  local log, prev = {}, EPOCH
  for d in string.gmatch(f, '%S+') do
    prev = prev + tonumber(d)
    log[#log + 1] = prev
  end
  return log
end

local function encode_log(log)
  local out, prev = {}, EPOCH
  for i = 1, #log do
    out[i] = fmt('%.17g', log[i] - prev)
    prev = log[i]
  end
  return table.concat(out, ' ')
end

-- decode_limit returns one limit's a, b, c, x (see ratelimit/internal/algo);
-- for a sliding log, a is its array of times.
local function decode_limit(algorithm, period, s)
  if s == nil or s == '' then
    if algorithm == 4 then return {}, 0, 0, 0 end
    return 0, 0, 0, 0
  end
  if algorithm == 3 and not find(s, ',', 1, true) then return dec_time(s), 0, 0, 0 end
  local f1, f2, f3, f4 = match(s, '^([^,]*),?([^,]*),?([^,]*),?([^,]*)$')
  local x = dec_time(f4)
  if algorithm == 0 then return dec_num(f1), dec_time(f2), 0, x end
  if algorithm == 1 then return dec_num(f1), dec_num(f2), dec_num(f3) * period, x end
  if algorithm == 2 then return dec_num(f1) / 1024, dec_time(f2), 0, x end
  if algorithm == 4 then return decode_log(f1), 0, 0, x end
  return dec_time(f1), 0, 0, x
end

local function encode_limit(algorithm, period, a, b, c, x)
  local s1, s2, s3 = '', '', ''
  if algorithm == 0 then
    s1, s2 = enc_num(a), enc_time(b)
  elseif algorithm == 1 then
    s1, s2, s3 = enc_num(a), enc_num(b), enc_num(c / period)
  elseif algorithm == 2 then
    s1, s2 = enc_num(a * 1024), enc_time(b)
  elseif algorithm == 4 then
    s1 = encode_log(a)
  else
    s1 = enc_time(a)
  end
  local s4 = enc_time(x)
  if s4 ~= '' then return s1 .. ',' .. s2 .. ',' .. s3 .. ',' .. s4 end
  if s3 ~= '' then return s1 .. ',' .. s2 .. ',' .. s3 end
  if s2 ~= '' then return s1 .. ',' .. s2 end
  return s1
end
