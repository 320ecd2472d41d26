-- Sliding-window counter: A = previous window's count, B = current count,
-- C = current window start (aligned to the period).
-- Mirrors ratelimit/internal/algo slidingWindow.
local function sliding_window(p, s, now, cost)
  local ws = math.floor(now / p.period) * p.period
  local prev, cur = 0, 0
  if s.c == ws then
    prev, cur = s.a, s.b
  elseif s.c == ws - p.period then
    prev = s.b
  end
  local elapsed = now - ws
  local weight = (p.period - elapsed) / p.period
  local o = {allowed = prev * weight + cur + cost <= p.rate, retry = 0, reset = 0}
  if o.allowed then cur = cur + cost end
  o.remaining = math.max(0, math.floor(p.rate - (prev * weight + cur)))
  if cur > 0 then
    o.reset = p.period - elapsed + p.period
  elseif prev > 0 then
    o.reset = p.period - elapsed
  end
  if not o.allowed then
    if cost > p.rate then
      o.retry = -1
    elseif cur + cost <= p.rate then
      o.retry = math.max(1, p.period - elapsed - (p.rate - cur - cost) * p.period / prev)
    else
      o.retry = p.period - elapsed + math.max(0, p.period - (p.rate - cost) * p.period / cur)
    end
  end
  o.next = {a = prev, b = cur, c = ws}
  o.ttl = ws + 2 * p.period - now
  return o
end
