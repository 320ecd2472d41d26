//go:build unix

// Unix only: the parent kills the child with SIGKILL and checks, through
// syscall.WaitStatus, that the signal is what ended it.

package kvstore

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The pipelined kill -9 test: a child process runs 16 "connections", each
// applying bursts of 16 one-key batches with NoSyncWait (keys c<conn>-<n>,
// n counting from 1) and waiting once per burst; it prints "c<conn> <n>"
// after each wait. The parent SIGKILLs it at a random moment and checks, per
// connection, that what survived is exactly c-1..c-m with no gap (nothing
// later survives without everything earlier) and m at least the last
// acknowledged n.

const crashPipelineEnv = "KVSTORE_CRASH_PIPELINE_DIR"

func crashPipelineChild(dir string) {
	db := openCrashChild(dir, crashOptions)
	var outMu sync.Mutex
	fmt.Println("ready")
	var wg sync.WaitGroup
	for c := 0; c < 16; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 1; ; {
				var waits []func() error
				for range 16 {
					var b Batch
					b.Set([]byte(fmt.Sprintf("c%02d-%09d", c, n)), []byte("x"))
					wait, err := db.Apply(&b, WriteOptions{NoSyncWait: true})
					if err != nil {
						fmt.Fprintln(os.Stderr, "child apply:", err)
						os.Exit(3)
					}
					waits = append(waits, wait)
					n++
				}
				// One wait covers the burst (the last batch's); every wait is
				// called so that a broken pipeline cannot hide behind it.
				for _, wait := range waits {
					if err := wait(); err != nil {
						fmt.Fprintln(os.Stderr, "child wait:", err)
						os.Exit(3)
					}
				}
				outMu.Lock()
				fmt.Printf("c%02d %d\n", c, n-1)
				outMu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func TestCrash_PipelinedBurstsRecoverInCallOrder(t *testing.T) {
	for round := 0; round < crashRounds(t)/2+1; round++ {
		dir := t.TempDir()
		acked := crashPipelineOnce(t, dir)
		db := openT(t, dir, crashOptions)
		for c := 0; c < 16; c++ {
			prefix := fmt.Sprintf("c%02d-", c)
			var after []byte
			m := 0
			for {
				page, err := db.Scan(ScanOptions{Prefix: []byte(prefix), After: after, Limit: 1000})
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range page.Entries {
					n, _ := strconv.Atoi(strings.TrimPrefix(string(e.Key), prefix))
					if n != m+1 {
						t.Fatalf("round %d: connection %d: %s survived but %s%09d did not", round, c, e.Key, prefix, m+1)
					}
					m = n
				}
				if page.Next == nil {
					break
				}
				after = page.Next
			}
			if m < acked[fmt.Sprintf("c%02d", c)] {
				t.Fatalf("round %d: connection %d: %d writes survive, %d were acknowledged", round, c, m, acked[fmt.Sprintf("c%02d", c)])
			}
		}
		db.Close()
	}
}

// crashPipelineOnce runs the pipelined child in dir, kills it at a random
// moment, and returns the last acknowledged n of each connection.
func crashPipelineOnce(t *testing.T, dir string) map[string]int {
	t.Helper()
	acked := map[string]int{}
	killMidWrite(t, []string{crashPipelineEnv + "=" + dir}, acked)
	return acked
}
