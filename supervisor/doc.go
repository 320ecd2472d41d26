// Package supervisor is devkit's daemonless process supervisor: processes
// declared in YAML, started in the background, known to be alive, stopped
// predictably, tailed and reconciled with the YAML — with every answer
// derived from records under a home directory plus the kernel, never from
// a resident daemon.
//
// # Model
//
// A [Config] (see [LoadConfig]) declares processes. A [Supervisor] over a
// home directory starts them ([Supervisor.Start], dependencies first,
// waiting for each one's ready probe), stops them ([Supervisor.Stop],
// dependents first, the whole process group, then session survivors),
// reports on them ([Supervisor.Status]) and reconciles them with the YAML
// ([Supervisor.ReloadPlan], [Supervisor.Reload]).
//
// # Safety
//
// A record stores the process's PID together with its start time and the
// boot id; it is trusted only when the kernel agrees. A PID that now names
// another process is reported [StateStale], its record removed, and it is
// never signalled (on Linux, signals go through a pidfd opened before the
// check). Per-name lock files make concurrent CLI runs safe: two starts of
// one name yield one process.
//
// # Monitors
//
// Each process gets a monitor: the calling program re-executed (see
// [Options.MonitorCommand], [MonitorMain] and [RunMonitor]), in the
// manner of podman's conmon; by default the running executable serves, when
// its main calls [MonitorMain] first, as moby's reexec.Init; or a program of
// its own that only calls [RunMonitor], chosen per process with
// [Options.MonitorCommandFunc] (devkit's devkit-sup-monitor, built with the
// devkit_sup_monitor tag, which leaves YAML and HTTP probes out so that an
// idle monitor costs about 1 MiB). Monitors run with GOMAXPROCS=1. A
// monitor records the exit code and time and applies the restart policy
// with capped exponential backoff. Killing a monitor hides nothing: status
// and stop work from the record alone.
//
// # Home
//
// [DefaultHome] is $OPS_HOME when set, else $DEVKIT_HOME/sup, else
// ~/.devkit/sup; it holds pids/, applied/, exits/, logs/ and locks/.
package supervisor
