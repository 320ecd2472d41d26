//go:build unix

// Unix only: the parent kills the child with SIGKILL (killMidWrite).

package kvstore

import (
	"os"
	"strconv"
	"testing"

	"github.com/devkit-go/devkit/kvstore/internal/wal"
)

// The kill -9 test of preallocated segments: TestCrash_KillDashNine's child
// and checks, with an engine that prepares segments from its first group on,
// so kills land while segments are zero-filled, installed, written over and
// cut back at rotation.

const crashPreallocEnv = "KVSTORE_CRASH_PREALLOC_DIR"

var crashPreallocOptions = func() Options {
	o := crashOptions
	o.preallocAfter = 1
	return o
}()

func init() {
	// Runs before TestMain: a child never reaches the test framework.
	if dir := os.Getenv(crashPreallocEnv); dir != "" {
		crashChild(dir, crashPreallocOptions)
		os.Exit(0)
	}
}

func TestCrash_PreallocatedLogLosesNoAcknowledgedWrite(t *testing.T) {
	dir := t.TempDir()
	rounds := crashRounds(t)
	acked := map[string]int{}
	totalAcks, zeroTails := 0, 0
	for round := 0; round < rounds; round++ {
		totalAcks += killMidWrite(t, []string{crashPreallocEnv + "=" + dir, crashBaseEnv + "=" + strconv.Itoa((round+1)*100_000_000)}, acked)
		// What the kill left: the newest segment preallocated and ending in
		// zeros, most rounds.
		if segs := segmentsOf(t, dir); len(segs) > 0 {
			b, err := os.ReadFile(segs[len(segs)-1].Path)
			if err != nil {
				t.Fatal(err)
			}
			if wal.Preallocated(b) && len(b) > wal.NonZeroEnd(b) {
				zeroTails++
			}
		}
		db := openT(t, dir, crashPreallocOptions)
		wantAcked(t, db, round, acked)
		if st := db.Stats(); st.TornTailBytes > 0 {
			t.Logf("round %d: %d-byte torn tail cut", round, st.TornTailBytes)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if zeroTails == 0 {
		t.Fatalf("no kill in %d rounds left a preallocated segment ending in zeros: the test did not exercise preallocation", rounds)
	}
	t.Logf("%d rounds, %d acknowledged writes checked, %d kills left a zero tail", rounds, totalAcks, zeroTails)
}
