package ratelimit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Algorithm selects how a Limit counts requests. Every store implements every
// algorithm with the same semantics.
type Algorithm uint8

const (
	// FixedWindow allows Rate requests per Period; the window starts at the
	// first request of an identity (not at a wall-clock boundary). The
	// simplest and cheapest choice, and the one to pair with a penalty Block
	// for brute-force protection (login, registration). It can let up to
	// 2×Rate through around a window edge.
	FixedWindow Algorithm = iota
	// SlidingWindow approximates a rolling window by weighting the previous
	// fixed window's count by how much of it still overlaps, with two
	// counters of state. What it guarantees: at most Rate per fixed window
	// (aligned to multiples of Period), and a smooth refill between them.
	// What it does not: an exact rolling window. It assumes the previous
	// window's requests were spread evenly; when they came at its end,
	// about 2×Rate can pass within one rolling Period around the boundary.
	// Use SlidingLog where that matters (logins, password resets).
	SlidingWindow
	// TokenBucket holds up to Burst tokens and refills Rate tokens per
	// Period. Quiet clients save up for a burst: the choice for write APIs
	// used in batches.
	TokenBucket
	// GCRA (generic cell rate algorithm) spaces requests Period/Rate apart
	// with a tolerance of Burst requests. Same long-run rate as TokenBucket
	// with a single timestamp of state: the choice for smooth, steady
	// per-client pacing.
	GCRA
	// SlidingLog keeps the time of every request of the last Period: exact,
	// never more than Rate in any rolling Period, at the cost of state that
	// grows with Rate (at most MaxSlidingLogRate entries). The choice for
	// low limits that must hold exactly, such as logins.
	SlidingLog
)

// MaxSlidingLogRate bounds the Rate of a SlidingLog limit: its state holds
// one timestamp per request of the window.
const MaxSlidingLogRate = 1000

var algorithmNames = [...]string{"fixed-window", "sliding-window", "token-bucket", "gcra", "sliding-log"}

// String returns the algorithm's name as written in policies and flags.
func (a Algorithm) String() string {
	if int(a) < len(algorithmNames) {
		return algorithmNames[a]
	}
	return "algorithm(" + strconv.Itoa(int(a)) + ")"
}

// ParseAlgorithm parses a name as returned by Algorithm.String.
func ParseAlgorithm(s string) (Algorithm, error) {
	for i, name := range algorithmNames {
		if strings.EqualFold(s, name) {
			return Algorithm(i), nil
		}
	}
	return 0, fmt.Errorf("unknown algorithm %q (want %s)", s, strings.Join(algorithmNames[:], ", "))
}

// MarshalText implements encoding.TextMarshaler.
func (a Algorithm) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (a *Algorithm) UnmarshalText(b []byte) error {
	v, err := ParseAlgorithm(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// Limit is one rate limit: Rate requests per Period under an Algorithm.
type Limit struct {
	// Name identifies the limit in headers (RateLimit-Policy), problem
	// bodies and metrics. Empty means a name derived from the parameters.
	Name      string
	Algorithm Algorithm
	// Rate is the number of requests (cost units) per Period. For
	// TokenBucket it is the refill: Rate tokens per Period.
	Rate int64
	// Period is the window length (fixed and sliding window) or the time
	// over which Rate is spread (token bucket, GCRA).
	Period time.Duration
	// Burst is the bucket capacity (TokenBucket) or the number of requests
	// that may arrive at once (GCRA). Zero means Rate. Ignored by the
	// window algorithms.
	Burst int64
	// Block is the penalty: once this limit denies a request, every request
	// of the identity under this limit is denied for Block. Zero disables it.
	Block time.Duration
}

// PerSecond is Rate requests per second.
func PerSecond(rate int64) Limit { return Limit{Rate: rate, Period: time.Second} }

// PerMinute is Rate requests per minute.
func PerMinute(rate int64) Limit { return Limit{Rate: rate, Period: time.Minute} }

// PerHour is Rate requests per hour.
func PerHour(rate int64) Limit { return Limit{Rate: rate, Period: time.Hour} }

// Validate reports whether the limit can be enforced.
func (l Limit) Validate() error {
	switch {
	case l.Algorithm > SlidingLog:
		return fmt.Errorf("ratelimit: limit %s: unknown algorithm %d", l.DisplayName(), l.Algorithm)
	case l.Rate <= 0:
		return fmt.Errorf("ratelimit: limit %s: rate must be positive, got %d", l.DisplayName(), l.Rate)
	case l.Period < time.Millisecond:
		return fmt.Errorf("ratelimit: limit %s: period must be at least 1ms, got %v", l.DisplayName(), l.Period)
	case l.Burst < 0:
		return fmt.Errorf("ratelimit: limit %s: burst must not be negative", l.DisplayName())
	case l.Block < 0:
		return fmt.Errorf("ratelimit: limit %s: block must not be negative", l.DisplayName())
	case l.Algorithm == SlidingLog && l.Rate > MaxSlidingLogRate:
		return fmt.Errorf("ratelimit: limit %s: sliding-log keeps one timestamp per request, so its rate is at most %d, got %d (use sliding-window or gcra for higher rates)",
			l.DisplayName(), MaxSlidingLogRate, l.Rate)
	}
	return nil
}

// Capacity is the most a fresh identity may spend at once: Burst for the
// bucket algorithms (Rate when zero), Rate for the windows. It is the value
// of the X-RateLimit-Limit header.
func (l Limit) Capacity() int64 {
	if (l.Algorithm == TokenBucket || l.Algorithm == GCRA) && l.Burst > 0 {
		return l.Burst
	}
	return l.Rate
}

// DisplayName is Name, or a name derived from the parameters when Name is
// empty, such as "fixed-window-100-per-1m0s".
func (l Limit) DisplayName() string {
	if l.Name != "" {
		return l.Name
	}
	return fmt.Sprintf("%s-%d-per-%v", l.Algorithm, l.Rate, l.Period)
}

// String describes the limit for humans: "login: fixed-window 5/15m0s block 1h0m0s".
func (l Limit) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s %d/%v", l.DisplayName(), l.Algorithm, l.Rate, l.Period)
	if l.Burst > 0 && (l.Algorithm == TokenBucket || l.Algorithm == GCRA) {
		fmt.Fprintf(&b, " burst %d", l.Burst)
	}
	if l.Block > 0 {
		fmt.Fprintf(&b, " block %v", l.Block)
	}
	return b.String()
}

// Errors callers test with errors.Is.
var (
	// ErrNoLimits is returned for a check without any limit.
	ErrNoLimits = errors.New("ratelimit: no limits to check")
	// ErrTooManyLimits is returned for a check with more than MaxLimits limits.
	ErrTooManyLimits = errors.New("ratelimit: too many limits in one check")
	// ErrStoreUnavailable wraps the store error behind a failure-policy decision.
	ErrStoreUnavailable = errors.New("ratelimit: store unavailable")
	// ErrLimited is what Result.Denial wraps for a denied request.
	ErrLimited = errors.New("ratelimit: rate limited")
)

// MaxLimits is the most limits one check may carry.
const MaxLimits = 16
