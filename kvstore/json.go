package kvstore

// The JSON of the engine's reports follows devkit's one schema rule, that of
// every --json output and admin endpoint: snake_case names, and durations as
// float seconds in fields whose names end in _seconds. The types own their
// schema: the servers and the CLI encode them as they are.

import (
	"encoding/json"
	"time"

	"github.com/devkit-go/devkit/internal/jsonschema"
)

// MarshalJSON implements json.Marshaler: see the schema rule above.
func (s Stats) MarshalJSON() ([]byte, error) {
	type plain Stats
	return json.Marshal(struct {
		plain
		ReplayDuration jsonschema.Seconds `json:"replay_duration_seconds"`
	}{plain(s), jsonschema.Seconds(s.ReplayDuration)})
}

// UnmarshalJSON implements json.Unmarshaler (the TCP JSON client decodes
// the server's Stats).
func (s *Stats) UnmarshalJSON(b []byte) error {
	type plain Stats
	v := struct {
		*plain
		ReplayDuration jsonschema.Seconds `json:"replay_duration_seconds"`
	}{plain: (*plain)(s)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	s.ReplayDuration = time.Duration(v.ReplayDuration)
	return nil
}

// MarshalJSON implements json.Marshaler: see the schema rule above.
func (r RecoveryReport) MarshalJSON() ([]byte, error) {
	type plain RecoveryReport
	return json.Marshal(struct {
		plain
		Duration jsonschema.Seconds `json:"duration_seconds"`
	}{plain(r), jsonschema.Seconds(r.Duration)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (r *RecoveryReport) UnmarshalJSON(b []byte) error {
	type plain RecoveryReport
	v := struct {
		*plain
		Duration jsonschema.Seconds `json:"duration_seconds"`
	}{plain: (*plain)(r)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	r.Duration = time.Duration(v.Duration)
	return nil
}

// MarshalJSON implements json.Marshaler: see the schema rule above.
func (i SnapshotInfo) MarshalJSON() ([]byte, error) {
	type plain SnapshotInfo
	return json.Marshal(struct {
		plain
		Duration jsonschema.Seconds `json:"duration_seconds"`
	}{plain(i), jsonschema.Seconds(i.Duration)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (i *SnapshotInfo) UnmarshalJSON(b []byte) error {
	type plain SnapshotInfo
	v := struct {
		*plain
		Duration jsonschema.Seconds `json:"duration_seconds"`
	}{plain: (*plain)(i)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	i.Duration = time.Duration(v.Duration)
	return nil
}
