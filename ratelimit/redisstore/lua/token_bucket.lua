-- Token bucket: A = tokens, B = time of the last refill.
-- Mirrors ratelimit/internal/algo tokenBucket.
local function token_bucket(rate, period, capacity, a, b, c, now, cost)
  local tokens = capacity
  if b ~= 0 then
    tokens = min(capacity, a + max(0, now - b) * rate / period)
  end
  local allowed = tokens >= cost
  if allowed then tokens = tokens - cost end
  -- Kept in 1/1024ths of a token, rounded down.
  tokens = floor(tokens * 1024) / 1024
  local reset = (capacity - tokens) * period / rate
  local retry = 0
  if not allowed then
    retry = (cost - tokens) * period / rate
    if cost > capacity then retry = -1 end
  end
  return allowed, floor(tokens), reset, retry, tokens, now, 0, reset
end
