package filelock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func open(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// A second handle on a held lock file is told ErrWouldBlock, and takes the
// lock once the first lets it go; the holder's PID is readable meanwhile.
func TestTryLock_ContentionIsErrWouldBlockUntilUnlocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "LOCK")
	a, b := open(t, path), open(t, path)
	if err := TryLock(a); err != nil {
		t.Fatal(err)
	}
	WriteHolder(a)
	if err := TryLock(b); !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("TryLock on a held lock = %v, want ErrWouldBlock", err)
	}
	if got := Holder(path); got != os.Getpid() {
		t.Fatalf("Holder = %d, want %d", got, os.Getpid())
	}
	if err := Unlock(a); err != nil {
		t.Fatal(err)
	}
	if err := TryLock(b); err != nil {
		t.Fatalf("TryLock after Unlock = %v", err)
	}
}

// A failure that is not contention (here a handle no longer open) is
// returned as itself, so it never reads as "locked by another process".
func TestTryLock_AFailureThatIsNotContentionIsReportedAsItself(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "LOCK"))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := TryLock(f); err == nil || errors.Is(err, ErrWouldBlock) {
		t.Fatalf("TryLock on a closed handle = %v, want its own error", err)
	}
}

func TestHolder_IsZeroWhenNoPIDCanBeRead(t *testing.T) {
	dir := t.TempDir()
	garbled := filepath.Join(dir, "garbled")
	if err := os.WriteFile(garbled, []byte("not a pid\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "missing"), garbled} {
		if got := Holder(path); got != 0 {
			t.Errorf("Holder(%s) = %d, want 0", filepath.Base(path), got)
		}
	}
}
