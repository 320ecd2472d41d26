// Package proc is the supervisor's boundary with the kernel: process
// identity, liveness, signals, waiting and tree termination.
//
// Invariant: a PID is signalled only after its recorded start time (and,
// where start times are relative to boot, the boot id) matches the
// kernel's. A PID alone is a hint, never an identity; on Linux the check is
// made through a pidfd, so the process verified is the process signalled.
package proc
