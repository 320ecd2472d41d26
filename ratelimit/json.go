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
	"time"

	"github.com/devkit-go/devkit/internal/jsonschema"
)

// Each type's JSON is a wire struct, written once and used both ways: a
// pointer to the type's fields (a defined type of it, without its methods),
// then the fields whose JSON differs, which shadow those of the same name.
// The wire structs are aliases of unnamed structs, so a decoding error
// names no Go type.

type (
	keyInfoFields      KeyInfo
	consumerFields     Consumer
	limitResultFields  LimitResult
	resultFields       Result
	ruleCountersFields RuleCounters
)

type keyInfoJSON = struct {
	*keyInfoFields
	TTL        jsonschema.Seconds `json:"ttl_seconds"`
	BlockedFor jsonschema.Seconds `json:"blocked_for_seconds"`
}

// MarshalJSON implements json.Marshaler: see the schema rule above.
func (k KeyInfo) MarshalJSON() ([]byte, error) {
	return json.Marshal(keyInfoJSON{(*keyInfoFields)(&k), jsonschema.Seconds(k.TTL), jsonschema.Seconds(k.BlockedFor)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (k *KeyInfo) UnmarshalJSON(b []byte) error {
	v := keyInfoJSON{keyInfoFields: (*keyInfoFields)(k)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	k.TTL, k.BlockedFor = time.Duration(v.TTL), time.Duration(v.BlockedFor)
	return nil
}

type consumerJSON = struct {
	*consumerFields
	TTL jsonschema.Seconds `json:"ttl_seconds"`
}

// MarshalJSON implements json.Marshaler: see the schema rule above.
func (c Consumer) MarshalJSON() ([]byte, error) {
	return json.Marshal(consumerJSON{(*consumerFields)(&c), jsonschema.Seconds(c.TTL)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *Consumer) UnmarshalJSON(b []byte) error {
	v := consumerJSON{consumerFields: (*consumerFields)(c)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	c.TTL = time.Duration(v.TTL)
	return nil
}

type limitResultJSON = struct {
	*limitResultFields
	ResetAfter jsonschema.Seconds `json:"reset_after_seconds"`
	RetryAfter jsonschema.Seconds `json:"retry_after_seconds"`
}

// MarshalJSON implements json.Marshaler: see the schema rule above. The
// limit is given by its name and capacity ("name", "limit", the quota of
// the RateLimit header fields).
func (r LimitResult) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Name     string `json:"name"`
		Capacity int64  `json:"limit"`
		limitResultJSON
	}{r.Limit.DisplayName(), r.Limit.Capacity(), limitResultJSON{(*limitResultFields)(&r), jsonschema.Seconds(r.ResetAfter), jsonschema.Seconds(r.RetryAfter)}})
}

// UnmarshalJSON implements json.Unmarshaler. The Limit is not rebuilt
// (its name and capacity do not define it).
func (r *LimitResult) UnmarshalJSON(b []byte) error {
	v := limitResultJSON{limitResultFields: (*limitResultFields)(r)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	r.ResetAfter, r.RetryAfter = time.Duration(v.ResetAfter), time.Duration(v.RetryAfter)
	return nil
}

type resultJSON = struct {
	*resultFields
	ResetAfter jsonschema.Seconds `json:"reset_after_seconds"`
	RetryAfter jsonschema.Seconds `json:"retry_after_seconds"`
}

// MarshalJSON implements json.Marshaler: see the schema rule above.
func (r Result) MarshalJSON() ([]byte, error) {
	return json.Marshal(resultJSON{(*resultFields)(&r), jsonschema.Seconds(r.ResetAfter), jsonschema.Seconds(r.RetryAfter)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (r *Result) UnmarshalJSON(b []byte) error {
	v := resultJSON{resultFields: (*resultFields)(r)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	r.ResetAfter, r.RetryAfter = time.Duration(v.ResetAfter), time.Duration(v.RetryAfter)
	return nil
}

type ruleCountersJSON = struct {
	*ruleCountersFields
	LatencyBounds []jsonschema.Seconds `json:"latency_bounds_seconds"`
	LatencySum    jsonschema.Seconds   `json:"latency_sum_seconds"`
}

// MarshalJSON implements json.Marshaler: see the schema rule above.
func (c RuleCounters) MarshalJSON() ([]byte, error) {
	bounds := make([]jsonschema.Seconds, len(c.LatencyBounds))
	for i, d := range c.LatencyBounds {
		bounds[i] = jsonschema.Seconds(d)
	}
	return json.Marshal(ruleCountersJSON{(*ruleCountersFields)(&c), bounds, jsonschema.Seconds(c.LatencySum)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *RuleCounters) UnmarshalJSON(b []byte) error {
	v := ruleCountersJSON{ruleCountersFields: (*ruleCountersFields)(c)}
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
