package dirlock

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devkit-go/devkit/internal/filelock"
)

func TestAcquire_ContentionIsErrLockedNamingTheHolder(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	_, err = Acquire(dir)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "PID ") {
		t.Fatalf("second Acquire = %v, want ErrLocked naming the PID", err)
	}
}

// TestAcquire_AFailureThatIsNotContentionIsReportedAsItself: a lock that
// fails for another reason (here a handle that is no longer open) must not
// read as "locked by another process".
func TestAcquire_AFailureThatIsNotContentionIsReportedAsItself(t *testing.T) {
	path := filepath.Join(t.TempDir(), "LOCK")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	err = lockError(path, filelock.TryLock(f))
	if err == nil || errors.Is(err, ErrLocked) {
		t.Fatalf("lock on a closed handle = %v, want its own error, not ErrLocked", err)
	}
}
