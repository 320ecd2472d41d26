package jsonschema

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestCheck_FindsEveryBrokenName(t *testing.T) {
	cases := []struct {
		name, doc string
		want      []string // substrings, one per problem, in path order
	}{
		{"seconds fields pass", `{"ttl_seconds": 1.5, "reset_after_seconds": -1, "keys_with_ttl": 3, "latency_buckets": [1, 2]}`, nil},
		{"nanoseconds", `{"replay_duration_ns": 12}`, []string{"$.replay_duration_ns: a duration in a unit other"}},
		{"milliseconds and microseconds", `[{"store_ms": 1}, {"latency_us": 2}]`, []string{"$[0].store_ms", "$[1].latency_us"}},
		{"bare duration name", `{"a": {"ttl": 5, "retry_after": 1, "blocked_for": 0}}`, []string{"$.a.blocked_for", "$.a.retry_after", "$.a.ttl"}},
		{"aggregate of durations", `{"latency_sum": 3, "latency_bounds": [1]}`, []string{"$.latency_bounds", "$.latency_sum"}},
		{"camelCase", `{"retryAfter": 1}`, []string{"$.retryAfter: not snake_case"}},
		{"go duration string", `{"limit": "fixed-window-2-per-1m0s", "window_seconds": 60, "x": "1m30s"}`, []string{`$.x: "1m30s" is a Go duration`}},
		{"one value per line", "{\"ok\": true}\n{\"took\": 1}\n", []string{"$.took"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Check([]byte(c.doc))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("problems %q, want %d like %q", got, len(c.want), c.want)
			}
			for i := range got {
				if !strings.Contains(got[i], c.want[i]) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], c.want[i])
				}
			}
		})
	}
	if _, err := Check([]byte(`{"a":`)); err == nil {
		t.Error("a truncated document passed")
	}
}

func TestSeconds_OneEncodingForEveryDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{{1500 * time.Millisecond, "1.5"}, {0, "0"}, {time.Nanosecond, "1e-09"}, {-time.Second, "-1"}, {-1, "-1"}} {
		b, err := json.Marshal(Seconds(c.d))
		if err != nil || string(b) != c.want {
			t.Errorf("Marshal(%v) = %s, %v; want %s", c.d, b, err, c.want)
		}
		var back Seconds
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("Unmarshal(%s): %v", b, err)
		}
		if want := c.d; (want < 0 && back != -1) || (want >= 0 && time.Duration(back) != want) {
			t.Errorf("round trip of %v gave %v", c.d, time.Duration(back))
		}
	}
	var s Seconds
	if err := json.Unmarshal([]byte("1e300"), &s); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("Unmarshal(1e300) = %v, %v; want an out-of-range error", time.Duration(s), err)
	}
	if err := json.Unmarshal([]byte(`"1s"`), &s); err == nil {
		t.Errorf("Unmarshal of a Go duration string succeeded: %v", time.Duration(s))
	}
}
