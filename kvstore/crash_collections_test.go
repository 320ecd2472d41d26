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

// The kill -9 test of collections: a child process runs 16 goroutines, each
// changing its own list, hash, set and sorted set under SyncAlways — one
// transaction per step n (RPUSH n, every fourth step an LPOP, HSET
// f<n%10> n, SADD s<n>, ZADD m<n%10> n) — and prints "g n" once the
// step is acknowledged. The parent SIGKILLs it at a random moment, reopens
// the directory (through snapshots and the log: the segments are small)
// and checks that every acknowledged step is there: the list is a run of
// consecutive numbers ending at n or later, and the hash, set and sorted
// set hold step n's writes or later ones.

const crashCollectionsEnv = "KVSTORE_CRASH_COLLECTIONS"

func init() {
	if v := os.Getenv(crashCollectionsEnv); v != "" {
		dir, round, _ := cutLast(v, ":")
		crashCollectionsChild(dir, round)
		os.Exit(0)
	}
}

func cutLast(s, sep string) (string, string, bool) {
	for i := len(s) - len(sep); i >= 0; i-- {
		if s[i:i+len(sep)] == sep {
			return s[:i], s[i+len(sep):], true
		}
	}
	return s, "", false
}

func collKey(round string, g int, kind string) []byte {
	return fmt.Appendf(nil, "r%s:%s:%02d", round, kind, g)
}

func crashCollectionsChild(dir, round string) {
	db := openCrashChild(dir, crashOptions)
	var outMu sync.Mutex
	if strings.HasPrefix(round, "big") {
		prefillBig(db, round)
	}
	fmt.Println("ready")
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 1; ; n++ {
				num := []byte(strconv.Itoa(n))
				err := db.Update(func(tx *Tx) error {
					if _, err := tx.RPush(collKey(round, g, "list"), num); err != nil {
						return err
					}
					if n%4 == 0 {
						if _, err := tx.LPop(collKey(round, g, "list"), 1); err != nil {
							return err
						}
					}
					if _, err := tx.HSet(collKey(round, g, "hash"), fmt.Appendf(nil, "f%d", n%10), num); err != nil {
						return err
					}
					if _, err := tx.SAdd(collKey(round, g, "set"), fmt.Appendf(nil, "s%d", n)); err != nil {
						return err
					}
					_, err := tx.ZAdd(collKey(round, g, "zset"), ZMember{Member: fmt.Appendf(nil, "m%d", n%10), Score: float64(n)})
					return err
				})
				if err != nil {
					fmt.Fprintln(os.Stderr, "child update:", err)
					os.Exit(3)
				}
				outMu.Lock()
				fmt.Printf("%02d %d\n", g, n)
				outMu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// prefillBig makes each goroutine's collections big (past bigAt) before
// the writes the test checks: the list -299..0, so that the steps continue
// it, 300 more hash fields, set and sorted-set members.
func prefillBig(db *DB, round string) {
	for g := range 16 {
		err := db.Update(func(tx *Tx) error {
			for i := -299; i <= 0; i++ {
				pre := fmt.Appendf(nil, "pre%d", i)
				if _, err := tx.RPush(collKey(round, g, "list"), []byte(strconv.Itoa(i))); err != nil {
					return err
				}
				if _, err := tx.HSet(collKey(round, g, "hash"), pre, pre); err != nil {
					return err
				}
				if _, err := tx.SAdd(collKey(round, g, "set"), pre); err != nil {
					return err
				}
				if _, err := tx.ZAdd(collKey(round, g, "zset"), ZMember{Member: pre, Score: float64(i)}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "child prefill:", err)
			os.Exit(3)
		}
	}
}

func TestCrash_KillDashNineLosesNoAcknowledgedCollectionWrite(t *testing.T) {
	crashCollections(t, "")
}

// The same with every collection past bigAt, in its big form.
func TestCrash_KillDashNineLosesNoAcknowledgedBigCollectionWrite(t *testing.T) {
	crashCollections(t, "big")
}

func crashCollections(t *testing.T, prefix string) {
	dir := t.TempDir()
	rounds := min(crashRounds(t), 8)
	acked := map[string]map[string]int{} // round -> goroutine -> highest acknowledged step
	total := 0
	for round := range rounds {
		r := prefix + strconv.Itoa(round)
		acked[r] = map[string]int{}
		total += killMidWrite(t, []string{crashCollectionsEnv + "=" + dir + ":" + r}, acked[r])
		db := openT(t, dir, crashOptions)
		for rr, byG := range acked {
			for gs, n := range byG {
				g, _ := strconv.Atoi(gs)
				checkCollections(t, db, rr, g, n)
				if prefix == "" {
					continue
				}
				for _, kind := range []string{"list", "hash", "set", "zset"} {
					if e, _ := db.mem.get(nil, collKey(rr, g, kind)); e.big == nil {
						t.Fatalf("round %s: the %s of goroutine %d recovered packed, not big", rr, kind, g)
					}
				}
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d rounds, %d acknowledged collection transactions checked", rounds, total)
}

func checkCollections(t *testing.T, db *DB, round string, g, n int) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("round %s goroutine %d (acknowledged step %d): "+format, append([]any{round, g, n}, args...)...)
	}
	list, err := db.LRange(collKey(round, g, "list"), 0, -1)
	if err != nil || len(list) == 0 {
		fail("list: %d elements, %v", len(list), err)
	}
	prev := -1
	for _, e := range list {
		v, _ := strconv.Atoi(string(e))
		if prev >= 0 && v != prev+1 {
			fail("list is not consecutive: %d after %d", v, prev)
		}
		prev = v
	}
	if prev < n {
		fail("list ends at %d", prev)
	}
	if v, err := db.HGet(collKey(round, g, "hash"), fmt.Appendf(nil, "f%d", n%10)); err != nil || atoi(v) < n {
		fail("hash field f%d = %q, %v", n%10, v, err)
	}
	ok := false
	err = db.Update(func(tx *Tx) (err error) {
		ok, err = tx.SIsMember(collKey(round, g, "set"), fmt.Appendf(nil, "s%d", n))
		return err
	})
	if err != nil || !ok {
		fail("set lacks s%d: %v", n, err)
	}
	if s, ok, err := db.ZScore(collKey(round, g, "zset"), fmt.Appendf(nil, "m%d", n%10)); err != nil || !ok || s < float64(n) {
		fail("zset m%d = %v %v %v", n%10, s, ok, err)
	}
}

func atoi(b []byte) int {
	n, _ := strconv.Atoi(string(b))
	return n
}
