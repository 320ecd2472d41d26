-- Token bucket: A = tokens, B = time of the last refill.
-- Mirrors ratelimit/internal/algo tokenBucket.
local function token_bucket(p, s, now, cost)
  local tokens = p.capacity
  if s.b ~= 0 then
    tokens = math.min(p.capacity, s.a + math.max(0, now - s.b) * p.rate / p.period)
  end
  local o = {allowed = tokens >= cost, retry = 0}
  if o.allowed then tokens = tokens - cost end
  tokens = math.floor(tokens * 1024) / 1024
  o.remaining = math.floor(tokens)
  o.reset = (p.capacity - tokens) * p.period / p.rate
  if not o.allowed then
    o.retry = (cost - tokens) * p.period / p.rate
    if cost > p.capacity then o.retry = -1 end
  end
  o.next = {a = tokens, b = now, c = 0}
  o.ttl = o.reset
  return o
end
