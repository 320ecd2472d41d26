package proc

import (
	"context"
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

// Run runs cmd and returns its combined output.
func (r *Reaper) Run(ctx context.Context, cmd *exec.Cmd) ([]byte, error) {
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			if cmd.Process != nil {
				_ = cmd.Process.Kill() // best effort: the wait below ends either way
			}
		case <-done:
		}
	}()
	return cmd.CombinedOutput()
}
