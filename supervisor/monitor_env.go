package supervisor

// A monitor runs with GOMAXPROCS=1: it sleeps nearly all the time, and a
// second P costs each idle monitor about 270 KiB of PSS (a second mcache's
// spans, more threads; BenchmarkIdleMonitorPSS). The Go runtime reads
// GOMAXPROCS before main, so the supervisor sets it in the monitor's
// environment. Invariant: the process inherits the environment of the
// start unchanged — the monitor unsets what the supervisor added (named in
// monitorUnsetEnv) before it starts anything, and a GOMAXPROCS the caller
// set is left alone (the monitor then runs with it too).

import (
	"os"
	"slices"
	"strings"
)

// monitorUnsetEnv names the variables the supervisor added to a monitor's
// environment for the monitor alone, comma-separated.
const monitorUnsetEnv = "DEVKIT_SUP_MONITOR_UNSET"

// monitorRuntimeEnv is what the supervisor adds to a monitor's environment
// for the monitor's runtime: GOMAXPROCS=1, unless the caller's environment
// (environ) or Options.MonitorEnv (extra) already sets it.
func monitorRuntimeEnv(environ, extra []string) []string {
	has := func(kv string) bool { return strings.HasPrefix(kv, "GOMAXPROCS=") }
	if slices.ContainsFunc(environ, has) || slices.ContainsFunc(extra, has) {
		return nil
	}
	return []string{"GOMAXPROCS=1", monitorUnsetEnv + "=GOMAXPROCS"}
}

// restoreMonitorEnv removes from this monitor's environment what its
// supervisor added for the monitor alone, so the process never inherits
// it. Only the variables monitorRuntimeEnv sets may be named.
func restoreMonitorEnv() error {
	names, ok := os.LookupEnv(monitorUnsetEnv)
	if !ok {
		return nil
	}
	for name := range strings.SplitSeq(names, ",") {
		if name == "GOMAXPROCS" {
			if err := os.Unsetenv(name); err != nil {
				return err
			}
		}
	}
	return os.Unsetenv(monitorUnsetEnv)
}
