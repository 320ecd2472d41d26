package supervisor

// The monitor is registered here, in the manner of Docker's reexec: a
// program that imports this package can serve as its own monitor, so
// Options.MonitorCommand may stay empty. The supervisor then re-executes
// the running executable with MonitorEnvVar set to its own PID, and this
// package's init turns that child into a monitor before main runs.
// Invariants: only a child of the process that set the variable (its PID
// is the value) becomes a monitor, so a variable left in a shell or
// inherited further down changes nothing; and the variable is removed from
// the environment at once, so the supervised process never inherits it.

import (
	"fmt"
	"os"
	"slices"
	"strconv"
)

// MonitorEnvVar is the environment variable by which the supervisor asks a
// re-executed program to run as a monitor (see Options.MonitorCommand). Its
// value is the PID of the supervisor that started it.
const MonitorEnvVar = "DEVKIT_SUP_MONITOR"

func init() {
	v, ok := os.LookupEnv(MonitorEnvVar)
	if !ok {
		return
	}
	if err := os.Unsetenv(MonitorEnvVar); err != nil {
		fmt.Fprintf(os.Stderr, "devkit-sup-monitor: unset %s: %v\n", MonitorEnvVar, err)
		os.Exit(1)
	}
	if v != strconv.Itoa(os.Getppid()) {
		return // not asked by our parent: a stray variable, now gone
	}
	os.Exit(RunMonitor(os.Stdin, os.Stdout))
}

// monitorCommand is the command that runs a monitor and what it adds to
// the environment: Options.MonitorCommand, or else the running executable,
// which this package's init turns into a monitor.
func (s *Supervisor) monitorCommand() (argv, env []string, err error) {
	if len(s.opts.MonitorCommand) > 0 {
		return s.opts.MonitorCommand, s.opts.MonitorEnv, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: the running executable cannot be found (%w); set Options.MonitorCommand", ErrNoMonitor, err)
	}
	return []string{exe}, append(slices.Clip(s.opts.MonitorEnv), MonitorEnvVar+"="+strconv.Itoa(os.Getpid())), nil
}
