package ratelimit

// The JSON of every type of this package follows one schema rule, the one of
// devkit's --json output and admin endpoints: snake_case names, and every
// duration is a number of seconds (a float) in a field whose name ends in
// _seconds; -1 means "never" (a negative duration: a cost that exceeds the
// capacity, a key without expiry). The types own their schema: servers and
// the CLI encode them as they are.

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// seconds is a duration as JSON: float seconds, -1 for a negative duration.
type seconds time.Duration

// MarshalJSON implements json.Marshaler.
func (s seconds) MarshalJSON() ([]byte, error) {
	if s < 0 {
		return []byte("-1"), nil
	}
	return strconv.AppendFloat(nil, time.Duration(s).Seconds(), 'g', -1, 64), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (s *seconds) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	switch {
	case f < 0:
		*s = -1
	case f*1e9 >= math.MaxInt64:
		*s = math.MaxInt64
	default:
		*s = seconds(math.Round(f * 1e9))
	}
	return nil
}

// MarshalJSON implements json.Marshaler: see the schema rule above.
func (k KeyInfo) MarshalJSON() ([]byte, error) {
	type plain KeyInfo
	return json.Marshal(struct {
		plain
		TTL        seconds `json:"ttl_seconds"`
		BlockedFor seconds `json:"blocked_for_seconds"`
	}{plain(k), seconds(k.TTL), seconds(k.BlockedFor)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (k *KeyInfo) UnmarshalJSON(b []byte) error {
	type plain KeyInfo
	v := struct {
		*plain
		TTL        seconds `json:"ttl_seconds"`
		BlockedFor seconds `json:"blocked_for_seconds"`
	}{plain: (*plain)(k)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	k.TTL, k.BlockedFor = time.Duration(v.TTL), time.Duration(v.BlockedFor)
	return nil
}

// MarshalJSON implements json.Marshaler: see the schema rule above.
func (c Consumer) MarshalJSON() ([]byte, error) {
	type plain Consumer
	return json.Marshal(struct {
		plain
		TTL seconds `json:"ttl_seconds"`
	}{plain(c), seconds(c.TTL)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *Consumer) UnmarshalJSON(b []byte) error {
	type plain Consumer
	v := struct {
		*plain
		TTL seconds `json:"ttl_seconds"`
	}{plain: (*plain)(c)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	c.TTL = time.Duration(v.TTL)
	return nil
}

// MarshalJSON implements json.Marshaler: see the schema rule above. The
// limit is given by its name and capacity ("name", "limit", the quota of
// the RateLimit header fields).
func (r LimitResult) MarshalJSON() ([]byte, error) {
	type plain LimitResult
	return json.Marshal(struct {
		Name     string `json:"name"`
		Capacity int64  `json:"limit"`
		plain
		ResetAfter seconds `json:"reset_after_seconds"`
		RetryAfter seconds `json:"retry_after_seconds"`
	}{r.Limit.DisplayName(), r.Limit.Capacity(), plain(r), seconds(r.ResetAfter), seconds(r.RetryAfter)})
}

// UnmarshalJSON implements json.Unmarshaler. The Limit is not rebuilt
// (its name and capacity do not define it).
func (r *LimitResult) UnmarshalJSON(b []byte) error {
	type plain LimitResult
	v := struct {
		*plain
		ResetAfter seconds `json:"reset_after_seconds"`
		RetryAfter seconds `json:"retry_after_seconds"`
	}{plain: (*plain)(r)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	r.ResetAfter, r.RetryAfter = time.Duration(v.ResetAfter), time.Duration(v.RetryAfter)
	return nil
}

// MarshalJSON implements json.Marshaler: see the schema rule above.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	return json.Marshal(struct {
		plain
		ResetAfter seconds `json:"reset_after_seconds"`
		RetryAfter seconds `json:"retry_after_seconds"`
	}{plain(r), seconds(r.ResetAfter), seconds(r.RetryAfter)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (r *Result) UnmarshalJSON(b []byte) error {
	type plain Result
	v := struct {
		*plain
		ResetAfter seconds `json:"reset_after_seconds"`
		RetryAfter seconds `json:"retry_after_seconds"`
	}{plain: (*plain)(r)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	r.ResetAfter, r.RetryAfter = time.Duration(v.ResetAfter), time.Duration(v.RetryAfter)
	return nil
}

// MarshalJSON implements json.Marshaler: see the schema rule above.
func (c RuleCounters) MarshalJSON() ([]byte, error) {
	type plain RuleCounters
	bounds := make([]seconds, len(c.LatencyBounds))
	for i, d := range c.LatencyBounds {
		bounds[i] = seconds(d)
	}
	return json.Marshal(struct {
		plain
		LatencyBounds []seconds `json:"latency_bounds_seconds"`
		LatencySum    seconds   `json:"latency_sum_seconds"`
	}{plain(c), bounds, seconds(c.LatencySum)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *RuleCounters) UnmarshalJSON(b []byte) error {
	type plain RuleCounters
	v := struct {
		*plain
		LatencyBounds []seconds `json:"latency_bounds_seconds"`
		LatencySum    seconds   `json:"latency_sum_seconds"`
	}{plain: (*plain)(c)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	c.LatencyBounds = make([]time.Duration, len(v.LatencyBounds))
	for i, s := range v.LatencyBounds {
		c.LatencyBounds[i] = time.Duration(s)
	}
	c.LatencySum = time.Duration(v.LatencySum)
	return nil
}

// UnmarshalText implements encoding.TextUnmarshaler: the inverse of MarshalText.
func (s *Source) UnmarshalText(b []byte) error {
	for i, name := range sourceNames {
		if name == string(b) {
			*s = Source(i)
			return nil
		}
	}
	return fmt.Errorf("ratelimit: unknown source %q", b)
}
