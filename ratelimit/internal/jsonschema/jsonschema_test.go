package jsonschema

import (
	"strings"
	"testing"
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
