package supervisor

// The monitor is entered in the manner of moby's reexec.Init(): a program
// that calls MonitorMain first thing in main can serve as its own monitor,
// so Options.MonitorCommand may stay empty. The supervisor then re-executes
// the running executable with MonitorEnvVar set to its own PID, and that
// child's MonitorMain runs the monitor and exits. No init does this: a
// library package never takes over or exits a program that only imports it.
// Invariants: only a child of the process that set the variable (its PID
// is the value) becomes a monitor, so a variable left in a shell or
// inherited further down changes nothing; the variable is removed from the
// environment at once, so the supervised process never inherits it; and
// the running executable is re-executed only by a program that called
// MonitorMain, so a program that did not is never started again as a
// would-be monitor running its own main.

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
)

// MonitorEnvVar is the environment variable by which the supervisor asks a
// re-executed program to run as a monitor (see Options.MonitorCommand). Its
// value is the PID of the supervisor that started it.
const MonitorEnvVar = "DEVKIT_SUP_MONITOR"

// monitorMainCalled records that this program calls MonitorMain, so that
// its executable may be re-executed as a monitor.
var monitorMainCalled atomic.Bool

// MonitorMain makes this program a process's monitor when a supervisor
// re-executed it as one (Options.MonitorCommand empty): it then runs
// RunMonitor on stdin and stdout and exits with its code. Otherwise it
// returns at once. A program that leaves Options.MonitorCommand empty must
// call it first in main, before anything that reads flags or starts work:
//
//	func main() {
//		supervisor.MonitorMain()
//		...
//	}
//
// Without the call, Start fails with ErrNoMonitor instead of starting the
// program's own main as a monitor.
func MonitorMain() {
	monitorMainCalled.Store(true)
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

// monitorCommand is the command that runs the monitor of spec and what it
// adds to the environment: what Options.MonitorCommandFunc chose, else
// Options.MonitorCommand, else the running executable when it calls
// MonitorMain. A nil spec asks only whether some monitor can run.
func (s *Supervisor) monitorCommand(spec *Process) (argv, env []string, err error) {
	if s.opts.MonitorCommandFunc != nil && spec != nil {
		if argv := s.opts.MonitorCommandFunc(spec); len(argv) > 0 {
			return argv, s.opts.MonitorEnv, nil
		}
	}
	if len(s.opts.MonitorCommand) > 0 {
		return s.opts.MonitorCommand, s.opts.MonitorEnv, nil
	}
	if !monitorMainCalled.Load() {
		return nil, nil, fmt.Errorf("%w: Options.MonitorCommand is empty and this program does not call supervisor.MonitorMain in main", ErrNoMonitor)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: the running executable cannot be found (%w); set Options.MonitorCommand", ErrNoMonitor, err)
	}
	return []string{exe}, append(slices.Clip(s.opts.MonitorEnv), MonitorEnvVar+"="+strconv.Itoa(os.Getpid())), nil
}
