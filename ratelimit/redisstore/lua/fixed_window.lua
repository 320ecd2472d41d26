-- Fixed window: A = count, B = window start (the first request's time).
-- Mirrors ratelimit/internal/algo fixedWindow.
local function fixed_window(p, s, now, cost)
  local count, start = s.a, s.b
  if start == 0 or now >= start + p.period then
    count, start = 0, now
  end
  local o = {allowed = count + cost <= p.rate, retry = 0}
  if o.allowed then count = count + cost end
  o.remaining = math.max(0, p.rate - count)
  o.reset = start + p.period - now
  if not o.allowed then
    o.retry = o.reset
    if cost > p.rate then o.retry = -1 end
  end
  o.next = {a = count, b = start, c = 0}
  o.ttl = o.reset
  return o
end
