package resp

import (
	"testing"
	"time"
)

// IdlePoll: zero takes the default (a loop polls 20 µs after the requests
// it read), negative turns the poll off (the loop polls only for a
// positive IdlePoll), and a value given stays.
func TestOptions_IdlePollDefaultAndOff(t *testing.T) {
	for _, tc := range []struct {
		given time.Duration
		polls bool
		want  time.Duration
	}{{0, true, DefaultIdlePoll}, {-1, false, 0}, {5 * time.Millisecond, true, 5 * time.Millisecond}} {
		got := Options{IdlePoll: tc.given}.withDefaults().IdlePoll
		if (got > 0) != tc.polls || (tc.polls && got != tc.want) {
			t.Errorf("IdlePoll %v: %v after the defaults, want %v (polls: %v)", tc.given, got, tc.want, tc.polls)
		}
	}
}
