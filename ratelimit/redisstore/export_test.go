package redisstore

// Key is the Redis key holding key's state, for tests that look at Redis
// directly. Users read it from Info (ratelimit.KeyInfo.StorageKey).
func (s *Store) Key(key string) string { return s.redisKey(key) }
