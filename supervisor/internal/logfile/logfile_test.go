package logfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRotateIfOver_ShiftsBackupsAndDropsTheOldest(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.log")
	ledger := Ledger{Path: filepath.Join(dir, ".ledger")}
	for round := 1; round <= 4; round++ {
		f, err := OpenAppend(path, ledger)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(strings.Repeat(fmt.Sprint(round), 20))
		f.Close()
		rotated, err := RotateIfOver(path, 10, 2, ledger)
		if err != nil || !rotated {
			t.Fatalf("round %d: rotated=%v err=%v", round, rotated, err)
		}
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("current log still there after rotation: %v", err)
	}
	for i, want := range map[int]string{1: "4", 2: "3"} {
		data, _ := os.ReadFile(fmt.Sprintf("%s.%d", path, i))
		if !strings.HasPrefix(string(data), want) {
			t.Errorf("%s.%d holds %q, want round %s", path, i, data, want)
		}
	}
	if _, err := os.Stat(path + ".3"); !os.IsNotExist(err) {
		t.Error("more backups kept than configured")
	}
	f, _ := OpenAppend(path, ledger)
	f.WriteString("small")
	f.Close()
	if rotated, _ := RotateIfOver(path, 10, 2, ledger); rotated {
		t.Error("rotated a file under the limit")
	}
}

func TestRotateIfOver_NeverTouchesAFileItDidNotCreate(t *testing.T) {
	dir := t.TempDir()
	ledger := Ledger{Path: filepath.Join(dir, ".ledger")}
	db := filepath.Join(dir, "app.db")
	os.WriteFile(db, []byte(strings.Repeat("precious", 100)), 0o600)
	for _, backups := range []int{0, 2} {
		if _, err := RotateIfOver(db, 10, backups, ledger); !errors.Is(err, ErrNotOurs) {
			t.Fatalf("rotate a foreign file (backups %d): %v, want ErrNotOurs", backups, err)
		}
	}
	// Nor a foreign file in the place of a backup.
	log := filepath.Join(dir, "app.log")
	f, _ := OpenAppend(log, ledger)
	f.WriteString(strings.Repeat("x", 20))
	f.Close()
	os.WriteFile(log+".1", []byte("someone else's"), 0o600)
	if _, err := RotateIfOver(log, 10, 2, ledger); !errors.Is(err, ErrNotOurs) {
		t.Fatalf("rotate over a foreign backup: %v, want ErrNotOurs", err)
	}
	if data, _ := os.ReadFile(db); len(data) != 800 {
		t.Fatal("the foreign file changed")
	}
	if data, _ := os.ReadFile(log + ".1"); string(data) != "someone else's" {
		t.Fatal("the foreign backup changed")
	}
}

func TestTail_LastLinesAcrossChunks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.log")
	var b bytes.Buffer
	for i := range 5000 {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	os.WriteFile(path, b.Bytes(), 0o600)
	got, err := Tail(path, 3)
	if err != nil || string(got) != "line 4997\nline 4998\nline 4999\n" {
		t.Fatalf("Tail = %q, %v", got, err)
	}
	os.WriteFile(path, []byte("a\nb"), 0o600) // no trailing newline
	if got, _ := Tail(path, 1); string(got) != "b" {
		t.Fatalf("Tail of unterminated line = %q", got)
	}
	if got, _ := Tail(path, 10); string(got) != "a\nb" {
		t.Fatalf("Tail of a short file = %q", got)
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestFollow_AcrossTruncationAndRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.log")
	os.WriteFile(path, []byte("old\n"), 0o600)
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- Follow(ctx, &out, path, 4) }()
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(out.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("follow output %q never contained %q", out.String(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	appendTo := func(s string) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(s)
		f.Close()
	}
	appendTo("one\n")
	waitFor("one\n")
	os.Truncate(path, 0) // truncated in place, then written again
	appendTo("two\n")
	waitFor("two\n")
	appendTo("last before rotation\n")
	os.Rename(path, path+".1") // rotated: a new file at the path
	appendTo("three\n")
	waitFor("three\n")
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Follow: %v", err)
	}
	if got := out.String(); strings.Contains(got, "old") || !strings.Contains(got, "last before rotation\n") {
		t.Fatalf("follow output = %q", got)
	}
}

func TestFollow_RenameAndCreateKeepsBothSides(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.log")
	writer, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- Follow(ctx, &out, path, 0) }()
	writer.WriteString("before\n")
	for !strings.Contains(out.String(), "before") {
		time.Sleep(10 * time.Millisecond)
	}
	os.Rename(path, path+".1") // logrotate's default: rename, then create
	os.WriteFile(path, []byte("new file\n"), 0o600)
	time.Sleep(3 * FollowInterval)
	// The process cannot reopen its log: it still writes to the old file.
	writer.WriteString("still to the renamed file\n")
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "still to the renamed file") || !strings.Contains(out.String(), "new file") {
		if time.Now().After(deadline) {
			t.Fatalf("follow output = %q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestFollowWaker_AnIdleLogWakesOnlyOnTheFallbackTickAndAWriteWakesAtOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.log")
	os.WriteFile(path, nil, 0o600)
	k := newWaker(path)
	defer k.close()
	if k.w == nil {
		t.Skip("no change events on this file system: the follower polls every FollowInterval")
	}
	ctx := context.Background()
	// Idle, with another process's log written beside it: one look per
	// FollowFallback, not one per FollowInterval or per sibling write.
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				f, _ := os.OpenFile(filepath.Join(dir, "other.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
				f.WriteString("x\n")
				f.Close()
			}
		}
	}()
	start := time.Now()
	k.wait(ctx)
	close(stop)
	if d := time.Since(start); d < FollowFallback*8/10 {
		t.Fatalf("an idle follower looked again after %v, want about %v", d, FollowFallback)
	}
	// A write to the log (or to a backup of it) wakes it well before the
	// fallback tick.
	for _, name := range []string{path, path + ".1"} {
		time.Sleep(FollowInterval)
		go func() {
			time.Sleep(50 * time.Millisecond)
			os.WriteFile(name, []byte("line\n"), 0o600)
		}()
		start = time.Now()
		k.wait(ctx)
		if d := time.Since(start); d > FollowFallback/2 {
			t.Fatalf("a write to %s woke the follower after %v", filepath.Base(name), d)
		}
	}
}
