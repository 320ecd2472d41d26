//go:build unix

// Unix only: the parent kills the child with SIGKILL and checks, through
// syscall.WaitStatus, that the signal is what ended it.

package kvstore

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The kill -9 test: a child process (this test binary, re-executed) writes
// under SyncAlways from 50 goroutines and prints every acknowledged write; the
// parent SIGKILLs it at a random moment, reopens the directory and checks
// that every acknowledged key holds its acknowledged value or a later one.

const (
	crashChildEnv = "KVSTORE_CRASH_CHILD_DIR"
	crashBaseEnv  = "KVSTORE_CRASH_BASE" // counters start above it, so they grow across rounds
)

// Small segments and a low compaction threshold, so kills also land in
// rotations and snapshots.
var crashOptions = Options{SegmentSize: 16 << 10, CompactionThreshold: 64 << 10}

func init() {
	// Runs before TestMain: a child never reaches the test framework.
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir, crashOptions)
		os.Exit(0)
	}
	if dir := os.Getenv(crashPipelineEnv); dir != "" {
		crashPipelineChild(dir)
		os.Exit(0)
	}
}

// openCrashChild opens dir with o as a crash child does, or exits 2.
func openCrashChild(dir string, o Options) *DB {
	o.Logger = quietLogger()
	db, err := Open(dir, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(2)
	}
	return db
}

// crashChild writes until it is killed, to dir opened with o. Each
// goroutine g cycles over ten keys and writes increasing counters; a line
// "key counter" is printed only after Set returned nil.
func crashChild(dir string, o Options) {
	db := openCrashChild(dir, o)
	base, _ := strconv.Atoi(os.Getenv(crashBaseEnv))
	var outMu sync.Mutex
	fmt.Println("ready")
	var wg sync.WaitGroup
	for g := 0; g < 50; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := base + 1; ; n++ {
				key := fmt.Sprintf("g%02d-k%d", g, n%10)
				if err := db.Set([]byte(key), []byte(strconv.Itoa(n))); err != nil {
					fmt.Fprintln(os.Stderr, "child set:", err)
					os.Exit(3)
				}
				outMu.Lock()
				fmt.Printf("%s %d\n", key, n)
				outMu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func crashRounds(t *testing.T) int {
	if s := os.Getenv("CRASH_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("CRASH_ROUNDS=%q is not a positive number", s)
		}
		return n
	}
	return 20
}

func TestCrash_KillDashNineLosesNoAcknowledgedWrite(t *testing.T) {
	dir := t.TempDir()
	if d := os.Getenv("CRASH_DIR"); d != "" {
		dir = d
	}
	rounds := crashRounds(t)
	acked := map[string]int{} // key -> highest acknowledged counter, across rounds
	totalAcks := 0
	for round := 0; round < rounds; round++ {
		totalAcks += crashOnce(t, dir, (round+1)*100_000_000, acked)
		db := openT(t, dir, crashOptions)
		wantAcked(t, db, round, acked)
		st := db.Stats()
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if round == rounds-1 {
			t.Logf("%d rounds, %d acknowledged writes checked; last open: snapshot at seq %d, %d records replayed, %d-byte torn tail cut",
				rounds, totalAcks, st.SnapshotSeq, st.ReplayedRecords, st.TornTailBytes)
		}
	}
}

// wantAcked fails unless db holds every acknowledged key at its counter or
// a later one.
func wantAcked(t *testing.T, db *DB, round int, acked map[string]int) {
	t.Helper()
	for key, n := range acked {
		v, err := db.Get([]byte(key))
		if err != nil {
			t.Fatalf("round %d: acknowledged key %s (counter %d) lost: %v", round, key, n, err)
		}
		got, err := strconv.Atoi(string(v))
		if err != nil || got < n {
			t.Fatalf("round %d: key %s = %q, acknowledged %d", round, key, v, n)
		}
	}
}

// crashOnce runs one child, kills it at a random moment, and records what it
// acknowledged into acked (the child's counters start above base, higher than
// any earlier round's). It returns the number of acknowledgements.
func crashOnce(t *testing.T, dir string, base int, acked map[string]int) int {
	t.Helper()
	return killMidWrite(t, []string{crashChildEnv + "=" + dir, crashBaseEnv + "=" + strconv.Itoa(base)}, acked)
}

// killMidWrite runs this test binary as a child with env added, waits for
// its "ready", then reads its acknowledgements — lines "name n" — into
// acked (the highest n of each name) until it is SIGKILLed at a random
// moment. It returns how many it read, and fails the test unless SIGKILL
// ended the child after at least one.
func killMidWrite(t *testing.T, env []string, acked map[string]int) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "ready" {
		cmd.Wait()
		t.Fatalf("child did not start: %q %s", sc.Text(), stderr.String())
	}
	// The clock starts at the first acknowledgement, so a slow start on a
	// busy machine still leaves the child writing when it is killed.
	killAfter := time.Duration(rand.IntN(200)) * time.Millisecond
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	n := 0
	for sc.Scan() {
		if timer == nil {
			timer = time.AfterFunc(killAfter, func() { cmd.Process.Signal(syscall.SIGKILL) })
		}
		// Only complete lines count: the last one may be cut by the kill.
		name, val, ok := strings.Cut(sc.Text(), " ")
		c, err := strconv.Atoi(val)
		if !ok || err != nil {
			continue
		}
		if c > acked[name] {
			acked[name] = c
		}
		n++
	}
	if timer == nil { // the child ended without a single acknowledgement
		cmd.Process.Signal(syscall.SIGKILL)
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, not by SIGKILL; stderr: %s", err, stderr.String())
	}
	if n == 0 {
		t.Fatalf("child acknowledged nothing in %v; stderr: %s", killAfter, stderr.String())
	}
	return n
}
