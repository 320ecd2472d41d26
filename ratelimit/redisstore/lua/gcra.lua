-- GCRA: A = theoretical arrival time.
-- Mirrors ratelimit/internal/algo gcra.
local function gcra(p, s, now, cost)
  local interval = p.period / p.rate
  local tolerance = interval * p.capacity
  local tat = math.max(s.a, now)
  local new_tat = math.ceil(tat + cost * interval)
  local diff = now - (new_tat - tolerance)
  local o = {allowed = false, retry = 0}
  if diff < 0 then
    o.retry = -diff
    if cost * interval > tolerance then o.retry = -1 end
    o.reset = tat - now
    o.remaining = math.max(0, math.floor((now - (tat - tolerance)) / interval))
    o.next = {a = tat, b = 0, c = 0}
  else
    o.allowed = true
    o.remaining = math.floor(diff / interval)
    o.reset = new_tat - now
    o.next = {a = new_tat, b = 0, c = 0}
  end
  o.ttl = o.reset
  return o
end
