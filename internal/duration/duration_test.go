package duration

import (
	"testing"
	"time"
)

func TestParse_GoDurationsAndPlainSecondsOnly(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"500ms", 500 * time.Millisecond, true},
		{"10s", 10 * time.Second, true},
		{"1h30m", 90 * time.Minute, true},
		{"5", 5 * time.Second, true},
		{"1.5", 1500 * time.Millisecond, true},
		{" 2 ", 2 * time.Second, true},
		{"0", 0, true},
		{"-1", 0, false},
		{"-1s", 0, false},
		{"ten", 0, false},
		{"", 0, false},
		{"inf", 0, false},
		{"NaN", 0, false},
		{"1e3", 0, false},
		{"0x10", 0, false},
		{"1.2.3", 0, false},
		{"99999999999999999999", 0, false},
	} {
		got, err := Parse(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("Parse(%q) = %v, %v; want %v, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
