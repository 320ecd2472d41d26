package ratelimit

import (
	"runtime/debug"
	"testing"
)

// TestGCPercent_DefaultFlagAndEnvironment: proxy and serve run the
// collector at DefaultGCPercent unless $GOGC says otherwise, and
// --gc-percent, when given, wins over both; a bad value is an error.
func TestGCPercent_DefaultFlagAndEnvironment(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "GOGC" {
				return v
			}
			return ""
		}
	}
	current := func() int { p := debug.SetGCPercent(100); debug.SetGCPercent(p); return p }

	debug.SetGCPercent(100)
	if pct, set := applyGCPercent(gcPercent{v: DefaultGCPercent}, env("")); !set || pct != 400 || current() != 400 {
		t.Errorf("default: %d set=%v, in force %d; want 400", pct, set, current())
	}
	debug.SetGCPercent(150) // as the runtime does for GOGC=150
	if pct, set := applyGCPercent(gcPercent{v: DefaultGCPercent}, env("150")); set || pct != 150 || current() != 150 {
		t.Errorf("GOGC=150, no flag: %d set=%v, in force %d; want 150 left alone", pct, set, current())
	}
	var g gcPercent
	if err := g.Set("200"); err != nil {
		t.Fatal(err)
	}
	if pct, set := applyGCPercent(g, env("150")); !set || pct != 200 || current() != 200 {
		t.Errorf("--gc-percent 200 with GOGC=150: %d set=%v, in force %d; want 200", pct, set, current())
	}
	for _, bad := range []string{"x", "-5", "1.5"} {
		if err := g.Set(bad); err == nil {
			t.Errorf("--gc-percent %s: no error", bad)
		}
	}
}
