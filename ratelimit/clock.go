package ratelimit

import "time"

// Clock is the one way time is put into ratelimit: the Now field of
// Options, memory.Options and redisstore.Options, with one rule for all.
//
// Nil is the real clock: the process's monotonic time for the Limiter and
// the memory store, the server's TIME for Redis (the clock every process
// that shares the store agrees on). A Clock that is set is read for every
// decision its component makes and wins over any time handed to it; a
// Limiter hands the time it read to an in-process store (InProcess.CheckAt),
// so a test that sets the Limiter's Clock drives a memory store without one.
//
// Clocks are for tests, which give one fake clock to every component they
// build and advance it by hand. In production leave them nil: processes
// sharing a Redis store must not decide by clocks that disagree.
type Clock func() time.Time
