-- GCRA: A = theoretical arrival time.
-- Mirrors ratelimit/internal/algo gcra.
local function gcra(rate, period, capacity, a, b, c, now, cost)
  local interval = period / rate
  local tolerance = interval * capacity
  local tat = max(a, now)
  -- Whole microseconds, rounded up: short numbers in Redis, never early.
  local new_tat = ceil(tat + cost * interval)
  local diff = now - (new_tat - tolerance)
  if diff < 0 then
    local retry = -diff
    if cost * interval > tolerance then retry = -1 end
    return false, max(0, floor((now - (tat - tolerance)) / interval)), tat - now, retry, tat, 0, 0, tat - now
  end
  return true, floor(diff / interval), new_tat - now, 0, new_tat, 0, 0, new_tat - now
end
