//go:build linux || darwin || windows

package proc

import (
	"errors"
	"os"
	"testing"
)

// A live PID whose start time differs from the recorded one names another
// process: Verify and Open refuse it, so it is never signalled.
func TestVerify_ForgedStartTimeIsAnotherProcess(t *testing.T) {
	self, err := Lookup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(self.Identity); err != nil {
		t.Fatalf("Verify(self) = %v", err)
	}
	forged := self.Identity
	forged.StartTime = "1"
	if _, err := Verify(forged); !errors.Is(err, ErrIdentityMismatch) {
		t.Fatalf("Verify(forged start time) = %v, want ErrIdentityMismatch", err)
	}
	if _, err := Open(forged); !errors.Is(err, ErrIdentityMismatch) {
		t.Fatalf("Open(forged) = %v, want ErrIdentityMismatch", err)
	}
}
