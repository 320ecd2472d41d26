-- Sliding-window counter: A = previous window's count, B = current count,
-- C = current window start (aligned to the period).
-- Mirrors ratelimit/internal/algo slidingWindow.
local function sliding_window(rate, period, capacity, a, b, c, now, cost)
  local ws = floor(now / period) * period
  local prev, cur = 0, 0
  if c == ws then
    prev, cur = a, b
  elseif c == ws - period then
    prev = b
  end
  local elapsed = now - ws
  local weight = (period - elapsed) / period
  local allowed = prev * weight + cur + cost <= rate
  if allowed then cur = cur + cost end
  local remaining = max(0, floor(rate - (prev * weight + cur)))
  local reset = 0
  if cur > 0 then
    reset = period - elapsed + period
  elseif prev > 0 then
    reset = period - elapsed
  end
  local retry = 0
  if not allowed then
    if cost > rate then
      retry = -1
    elseif cur + cost <= rate then
      retry = max(1, period - elapsed - (rate - cur - cost) * period / prev)
    else
      retry = period - elapsed + max(0, period - (rate - cost) * period / cur)
    end
  end
  return allowed, remaining, reset, retry, prev, cur, ws, ws + 2 * period - now
end
