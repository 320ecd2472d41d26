-- lean_fw: checks of one fixed-window limit each, in the window's own key:
-- an integer counter whose TTL is the window (set on the first hit), so a
-- check is INCRBY and PTTL (PEXPIRE instead on a window's first hit) and
-- reads no clock. The window starts at the identity's first request, as in
-- fixed_window.lua; a test clock never comes here (the key's TTL is the
-- server's clock).
--
-- KEYS[k]  the window key of check k, "<identity key>:<limit id>"; its
--          penalty key, "<identity key>!<limit id>", exists (with the
--          block as its TTL) while a penalty block is in force. Both are in
--          the identity's hash slot; the penalty key is only read on a
--          window's first hit or while the counter carries MARK.
-- ARGV[1]  number of checks; then per check: cost (> 0), rate, period ms,
--          block ms (0 = none)
-- Returns 5 integers per check: allowed, remaining, reset µs, retry µs,
-- blocked.
--
-- The counter may run past the rate: a denial of cost 1 from a counter
-- already at the rate is not taken back (it changes no answer: every later
-- request of the window is denied either way, and the counter then also
-- counts the denied requests for top); one from below the rate (a cost too
-- big for what is left), or of a cost above 1, is, so the counter grows by
-- at most one per request and never reaches MARK. While a block is in force the counter carries MARK, so that the
-- common check needs no look at the penalty key; a window key created while
-- a block is in force (the window ended first) is checked against it. The
-- general driver (check.lua, algorithm 5) keeps the same invariants.
local MARK, MARK_ARG = 1125899906842624, '1125899906842624' -- 2^50: above any lean rate plus cost (< 2^48 each)
-- Globals are read once a call, into locals: a check read about ten, and
-- each is a table lookup in Redis, two in devkit kv (its protected _G). The
-- check is written out in the loop, not as a function: a function defined
-- here would be a new closure at every call, with an upvalue for each of
-- these locals (devkit kv's Lua allocates each; 13 of a call's allocations).
local call, rpcall, tonumber, type, sub = redis.call, redis.pcall, tonumber, type, string.sub
local keys, argv = KEYS, ARGV

local out = {}
for k = 0, tonumber(argv[1]) - 1 do
  local key, a = keys[k + 1], 4 * k + 2
  -- The check's answer; each way out of the repeat block sets it.
  local allowed, remaining, reset, retry, blocked
  repeat
    local costs = argv[a]
    local cost, rate = tonumber(costs), tonumber(argv[a + 1])
    local v = rpcall('INCRBY', key, costs)
    if type(v) ~= 'number' then
      -- Not a counter (written by something else): replaced by a fresh one.
      call('DEL', key)
      v = call('INCRBY', key, costs)
    end
    local fresh = v == cost
    -- The penalty key: "<identity key>!<limit id>" for "<identity key>:<limit id>".
    local n = #key
    if v >= MARK then
      local bt = call('PTTL', sub(key, 1, n - 6) .. '!' .. sub(key, n - 4))
      if bt > 0 then
        call('DECRBY', key, costs)
        allowed, remaining, reset, retry, blocked = 0, 0, bt * 1000, bt * 1000, 1
        break
      end
      v = call('DECRBY', key, MARK_ARG) -- the block is over
    elseif fresh and argv[a + 3] ~= '0' then
      local bt = call('PTTL', sub(key, 1, n - 6) .. '!' .. sub(key, n - 4))
      if bt > 0 then
        call('DEL', key)
        allowed, remaining, reset, retry, blocked = 0, 0, bt * 1000, bt * 1000, 1
        break
      end
    end
    local ttl
    if fresh then
      ttl = tonumber(argv[a + 2])
    else
      ttl = call('PTTL', key)
      if ttl < 0 then
        -- A counter without expiry yet (a plain check sets it after its
        -- INCRBY, lean.go countPlain): its window starts now.
        call('PEXPIRE', key, argv[a + 2])
        ttl = tonumber(argv[a + 2])
      end
    end
    if v <= rate then
      if fresh then call('PEXPIRE', key, argv[a + 2]) end
      allowed, remaining, reset, retry, blocked = 1, rate - v, ttl * 1000, 0, 0
      break
    end
    local count = v - cost
    if fresh then
      call('DEL', key)
    elseif count < rate or cost > 1 then
      -- (A denied cost above 1 is always taken back: left in, costs up to
      -- 2^48 each would pile up into MARK in a few requests.)
      call('DECRBY', key, costs)
    end
    reset = ttl * 1000
    retry = reset
    if cost > rate then retry = -1 end
    blocked = 0
    local block = tonumber(argv[a + 3])
    if block > 0 then
      blocked = 1
      call('SET', sub(key, 1, n - 6) .. '!' .. sub(key, n - 4), 1, 'PX', argv[a + 3])
      if not fresh then call('INCRBY', key, MARK_ARG) end
      if retry >= 0 and retry < block * 1000 then retry = block * 1000 end
      if reset < block * 1000 then reset = block * 1000 end
    end
    allowed, remaining = 0, rate - count
    if remaining < 0 then remaining = 0 end
  until true
  local o = 5 * k
  out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5] = allowed, remaining, reset, retry, blocked
end
return out
