package proc

import (
	"errors"
	"os/exec"
)

// Reaper on Windows waits for each command it started through its handle;
// there are no orphans to collect.
type Reaper struct{}

// NewReaper returns a Reaper.
func NewReaper() *Reaper { return &Reaper{} }

// Start starts cmd and returns where its exit status arrives.
func (r *Reaper) Start(cmd *exec.Cmd) (<-chan ExitStatus, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ch := make(chan ExitStatus, 1)
	go func() {
		err := cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
			ch <- ExitStatus{}
		case errors.As(err, &ee):
			ch <- ExitStatus{Code: ee.ExitCode()}
		default:
			ch <- ExitStatus{Code: 127}
		}
	}()
	return ch, nil
}
