// Package supervisor is devkit's daemonless process supervisor: processes
// declared in YAML, with every start, stop, status and reload derived from
// PID records under a home directory and from the kernel.
//
// The implementation lands with the supervisor issue; this package exists
// so the module builds and tests on its own from the start.
package supervisor
