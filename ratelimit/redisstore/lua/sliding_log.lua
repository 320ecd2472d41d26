-- Sliding log: A = the times of the requests in the window, oldest first
-- (a Lua array, one entry per cost unit, at most rate). Exact: never more
-- than rate in any rolling period. Mirrors ratelimit/internal/algo
-- slidingLog; the input array is never modified.
local function sliding_log(rate, period, capacity, a, b, c, now, cost)
  local log = a
  if type(log) ~= 'table' then log = {} end
  local first = 1
  while first <= #log and log[first] + period <= now do first = first + 1 end
  local n = #log - first + 1
  local allowed = n + cost <= rate
  local nxt = {}
  for i = first, #log do nxt[#nxt + 1] = log[i] end
  if allowed then
    for _ = 1, cost do nxt[#nxt + 1] = now end
  end
  local reset = 0
  if #nxt > 0 then reset = nxt[#nxt] + period - now end
  local retry = 0
  if not allowed then
    if cost > rate then
      retry = -1
    else
      retry = log[first + (n + cost - rate) - 1] + period - now
    end
  end
  return allowed, max(0, rate - #nxt), reset, retry, nxt, 0, 0, reset
end
