-- Fixed window: A = count, B = window start (the first request's time).
-- Mirrors ratelimit/internal/algo fixedWindow. Returns allowed, remaining,
-- reset, retry, next A, B, C, ttl (µs).
local function fixed_window(rate, period, capacity, a, b, c, now, cost)
  local count, start = a, b
  if start == 0 or now >= start + period then
    count, start = 0, now
  end
  local allowed = count + cost <= rate
  if allowed then count = count + cost end
  local reset = start + period - now
  local retry = 0
  if not allowed then
    retry = reset
    if cost > rate then retry = -1 end
  end
  return allowed, max(0, rate - count), reset, retry, count, start, 0, reset
end
