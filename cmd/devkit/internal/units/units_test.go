package units

import (
	"testing"
	"time"
)

func TestFormats(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Bytes(0), "-"}, {Bytes(512), "512B"}, {Bytes(1536), "1.5K"}, {Bytes(12 << 20), "12.0M"}, {Bytes(3 << 30), "3.0G"},
		{CPUTime(0), "-"}, {CPUTime(0.421), "0.42s"}, {CPUTime(65), "1m05s"}, {CPUTime(7380), "2h03m"},
		{Duration(0), "-"}, {Duration(45 * time.Second), "45s"}, {Duration(192 * time.Second), "3m12s"},
		{Duration(125 * time.Minute), "2h05m"}, {Duration(76 * time.Hour), "3d04h"},
		{Rate(0), "0.0"}, {Rate(12.34), "12.3"}, {Rate(456.7), "457"}, {Rate(45600), "45.6k"}, {Rate(2.5e6), "2.5M"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
