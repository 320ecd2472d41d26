package kvstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore/internal/vfs"
)

// Benchmarks. Figures are read against BenchmarkFsyncBaseline, run in the
// same command on the same disk: docs/benchmarks.md shows the ratios.

var benchValue = []byte("0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789") // 100 bytes

func benchKey(i int) []byte { return fmt.Appendf(nil, "key-%09d", i) }

// benchKeys are made before the clock starts, so key formatting is not
// measured as the engine's cost.
var benchKeys = sync.OnceValue(func() [][]byte {
	keys := make([][]byte, 100_000)
	for i := range keys {
		keys[i] = benchKey(i)
	}
	return keys
})

// BenchmarkFsyncBaseline is the cost of one durable 100-byte append on this
// disk: write(2) then fdatasync(2), the floor under SyncAlways.
func BenchmarkFsyncBaseline(b *testing.B) { benchAppend(b, true) }

// BenchmarkWriteBaseline is one 100-byte write(2) to a file without fsync:
// the floor under SyncNone and SyncPeriodic for a lone writer, since a write
// is acknowledged only after the OS has it.
func BenchmarkWriteBaseline(b *testing.B) { benchAppend(b, false) }

func benchAppend(b *testing.B, sync bool) {
	f, err := vfs.OS{}.OpenFile(filepath.Join(b.TempDir(), "baseline"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.ReportAllocs()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := f.Write(benchValue); err != nil {
			b.Fatal(err)
		}
		if sync {
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
}

func reportWrites(b *testing.B, db *DB, start time.Time) {
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
	if st := db.Stats(); st.Fsyncs > 0 && db.opts.Sync == SyncAlways {
		b.ReportMetric(st.RecordsPerFsync, "records/fsync")
	}
}

func BenchmarkSet(b *testing.B) {
	for _, p := range []SyncPolicy{SyncAlways, SyncPeriodic, SyncNone} {
		b.Run(p.String(), func(b *testing.B) {
			db := benchOpen(b, b.TempDir(), Options{Sync: p})
			defer db.Close()
			keys := benchKeys()
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				if err := db.Set(keys[i%len(keys)], benchValue); err != nil {
					b.Fatal(err)
				}
			}
			reportWrites(b, db, start)
		})
	}
}

// BenchmarkSetAlwaysConcurrent runs b.N writes under SyncAlways spread over
// 1, 8 and 64 writers: group commit should make 64 writers many times
// faster than one.
func BenchmarkSetAlwaysConcurrent(b *testing.B) {
	for _, writers := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) { benchConcurrent(b, SyncAlways, writers) })
	}
}

// BenchmarkSetNoneConcurrent is SyncNone with 64 writers: one write(2) per
// group-commit batch instead of one per Set.
func BenchmarkSetNoneConcurrent(b *testing.B) {
	b.Run("writers=64", func(b *testing.B) { benchConcurrent(b, SyncNone, 64) })
}

func benchConcurrent(b *testing.B, policy SyncPolicy, writers int) {
	db := benchOpen(b, b.TempDir(), Options{Sync: policy})
	defer db.Close()
	var next atomic.Int64
	var wg sync.WaitGroup
	keys := benchKeys()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				if err := db.Set(keys[i%int64(len(keys))], benchValue); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	reportWrites(b, db, start)
}

func benchOpen(b *testing.B, dir string, o Options) *DB {
	b.Helper()
	o.Logger = quietLogger()
	db, err := Open(dir, o)
	if err != nil {
		b.Fatal(err)
	}
	return db
}

func preload(b *testing.B, db *DB, n int) {
	b.Helper()
	for i := 0; i < n; i++ {
		if err := db.Set(benchKey(i), benchValue); err != nil {
			b.Fatal(err)
		}
	}
}

const getKeys = 100_000

func BenchmarkGet(b *testing.B) {
	db := benchOpen(b, b.TempDir(), Options{Sync: SyncNone})
	defer db.Close()
	preload(b, db, getKeys)
	keys := make([][]byte, 4096)
	for i := range keys {
		keys[i] = benchKey(rand.IntN(getKeys))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := db.Get(keys[i%len(keys)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetAppend is Get into a reused buffer, as a server's reply path
// reads: no allocation.
func BenchmarkGetAppend(b *testing.B) {
	db := benchOpen(b, b.TempDir(), Options{Sync: SyncNone})
	defer db.Close()
	preload(b, db, getKeys)
	keys := make([][]byte, 4096)
	for i := range keys {
		keys[i] = benchKey(rand.IntN(getKeys))
	}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v, err := db.GetAppend(buf[:0], keys[i%len(keys)])
		if err != nil {
			b.Fatal(err)
		}
		buf = v
	}
}

// BenchmarkGetBaseline is the floor under Get on this machine: the same
// lookups in one bare Go map behind one sync.RWMutex, nothing else.
func BenchmarkGetBaseline(b *testing.B) {
	var mu sync.RWMutex
	m := make(map[string][]byte, getKeys)
	for i := 0; i < getKeys; i++ {
		m[string(benchKey(i))] = benchValue
	}
	keys := make([][]byte, 4096)
	for i := range keys {
		keys[i] = benchKey(rand.IntN(getKeys))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		mu.RLock()
		_, ok := m[string(keys[i%len(keys)])]
		mu.RUnlock()
		if !ok {
			b.Fatal("missing key")
		}
	}
}

// BenchmarkGetWhileWriting measures reads while 64 writers run under
// SyncAlways: reads must not wait for fsyncs.
func BenchmarkGetWhileWriting(b *testing.B) {
	db := benchOpen(b, b.TempDir(), Options{})
	defer db.Close()
	preloadParallel(b, db, getKeys)
	stop := startWriters(b, db, 64)
	keys := make([][]byte, 4096)
	for i := range keys {
		keys[i] = benchKey(rand.IntN(getKeys))
	}
	lat := make([]time.Duration, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := db.Get(keys[i%len(keys)]); err != nil {
			b.Fatal(err)
		}
		lat[i] = time.Since(t0)
	}
	b.StopTimer()
	writes := stop()
	reportPercentiles(b, lat, "read")
	b.ReportMetric(float64(writes), "concurrent-writes")
}

// preloadParallel fills db with n keys from 64 writers (group commit keeps
// the SyncAlways preload short).
func preloadParallel(b *testing.B, db *DB, n int) {
	b.Helper()
	var wg sync.WaitGroup
	var next atomic.Int64
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				if err := db.Set(benchKey(int(i)), benchValue); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// startWriters runs n writers until the returned stop is called; stop
// returns how many writes they made.
func startWriters(b *testing.B, db *DB, n int) (stop func() int64) {
	var wg sync.WaitGroup
	var count atomic.Int64
	done := make(chan struct{})
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				if err := db.Set(benchKey(rand.IntN(getKeys)), benchValue); err != nil {
					b.Error(err)
					return
				}
				count.Add(1)
			}
		}()
	}
	return func() int64 {
		close(done)
		wg.Wait()
		return count.Load()
	}
}

func reportPercentiles(b *testing.B, lat []time.Duration, what string) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	p := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Nanoseconds()) }
	b.ReportMetric(p(0.50), what+"-p50-ns")
	b.ReportMetric(p(0.99), what+"-p99-ns")
}

const replayRecords = 1_000_000

var replayDirMade atomic.Pointer[string]

// replayDir is made once per test binary run and removed by TestMain.
var replayDir = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "kvstore-replay-bench")
	if err != nil {
		return "", err
	}
	replayDirMade.Store(&dir)
	db, err := Open(dir, Options{Sync: SyncNone, CompactionThreshold: -1, Logger: quietLogger()})
	if err != nil {
		return "", err
	}
	for i := 0; i < replayRecords; i++ {
		if err := db.Set(benchKey(i), benchValue); err != nil {
			return "", err
		}
	}
	return dir, db.Close()
})

// BenchmarkReplay1M opens a log of 1M 100-byte records (no snapshot): the
// time to recover after a crash with the whole log to replay.
func BenchmarkReplay1M(b *testing.B) {
	dir, err := replayDir()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		db := benchOpen(b, dir, Options{CompactionThreshold: -1})
		if st := db.Stats(); st.ReplayedRecords != replayRecords {
			b.Fatalf("replayed %d records", st.ReplayedRecords)
		}
		db.Close()
	}
	b.ReportMetric(float64(replayRecords*b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkSnapshotWhileWriting snapshots 1M keys while 8 writers run under
// SyncAlways, and reports the writers' latency percentiles during it.
func BenchmarkSnapshotWhileWriting(b *testing.B) {
	dir, err := replayDir()
	if err != nil {
		b.Fatal(err)
	}
	work := b.TempDir()
	for _, s := range segmentsOf2(b, dir) {
		data, err := os.ReadFile(s)
		if err != nil {
			b.Fatal(err)
		}
		os.WriteFile(filepath.Join(work, filepath.Base(s)), data, 0o644)
	}
	db := benchOpen(b, work, Options{CompactionThreshold: -1})
	defer db.Close()
	var mu sync.Mutex
	var lat []time.Duration
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for {
				select {
				case <-done:
					mu.Lock()
					lat = append(lat, mine...)
					mu.Unlock()
					return
				default:
				}
				t0 := time.Now()
				if err := db.Set(benchKey(rand.IntN(replayRecords)), benchValue); err != nil {
					b.Error(err)
					return
				}
				mine = append(mine, time.Since(t0))
			}
		}()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := db.Snapshot(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	close(done)
	wg.Wait()
	reportPercentiles(b, lat, "write")
	b.ReportMetric(float64(len(lat)), "writes-during")
}

func segmentsOf2(b *testing.B, dir string) []string {
	m, err := filepath.Glob(filepath.Join(dir, "*.wal"))
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkOpen1M_SnapshotVsLog opens the same 1M keys of 100 bytes twice
// per round, alternating: from the log alone, and from a snapshot that
// replaces that log; it reports both times and their ratio (snapshot/log,
// below 1 when loading the snapshot is faster than replaying the log). The
// log is written in key order (the best case for replay) or in random key
// order (as traffic writes it); the snapshot is in key order either way.
func BenchmarkOpen1M_SnapshotVsLog(b *testing.B) {
	for _, order := range []string{"sequential", "random"} {
		b.Run("log="+order, func(b *testing.B) {
			keys := make([]int, replayRecords)
			for i := range keys {
				keys[i] = i
			}
			if order == "random" {
				rand.New(rand.NewPCG(7, 7)).Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
			}
			logDir := b.TempDir()
			db := benchOpen(b, logDir, Options{Sync: SyncNone, CompactionThreshold: -1})
			var batch Batch
			for n, i := range keys {
				batch.Set(benchKey(i), benchValue)
				if batch.Len() == 1000 || n == len(keys)-1 {
					if err := db.Write(&batch); err != nil {
						b.Fatal(err)
					}
					batch.Reset()
				}
			}
			db.Close()
			snapDir := b.TempDir()
			for _, s := range segmentsOfB(b, logDir) {
				copyFileB(b, s, filepath.Join(snapDir, filepath.Base(s)))
			}
			db = benchOpen(b, snapDir, Options{CompactionThreshold: -1})
			if _, err := db.Snapshot(context.Background()); err != nil {
				b.Fatal(err)
			}
			db.Close()
			open := func(dir string, wantReplayed bool) time.Duration {
				start := time.Now()
				db := benchOpen(b, dir, Options{CompactionThreshold: -1})
				d := time.Since(start)
				if db.Len() != replayRecords || (db.Recovery().Records > 0) != wantReplayed {
					b.Fatalf("%s: %d keys, %d records replayed", dir, db.Len(), db.Recovery().Records)
				}
				db.Close()
				return d
			}
			var fromLog, fromSnap []float64
			b.ResetTimer()
			for range b.N {
				fromLog = append(fromLog, open(logDir, true).Seconds())
				fromSnap = append(fromSnap, open(snapDir, false).Seconds())
			}
			l, s := medianOf(fromLog), medianOf(fromSnap)
			b.ReportMetric(l*1e3, "log-ms")
			b.ReportMetric(s*1e3, "snapshot-ms")
			b.ReportMetric(s/l, "snapshot/log")
		})
	}
}

func segmentsOfB(b *testing.B, dir string) []string {
	b.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.wal"))
	if err != nil {
		b.Fatal(err)
	}
	return paths
}

func copyFileB(b *testing.B, src, dst string) {
	b.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		b.Fatal(err)
	}
}

func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkUpdateIncrVsSetConcurrent runs 50 goroutines under SyncAlways
// doing INCR-style transactions on 100 counters, then plain Sets of the same
// keys, alternating, and reports both rates and their ratio: transactions
// share group commits like plain writes (a ratio near 1), they do not queue
// behind each other's fsyncs.
func BenchmarkUpdateIncrVsSetConcurrent(b *testing.B) {
	db := benchOpen(b, b.TempDir(), Options{CompactionThreshold: -1})
	defer db.Close()
	const workers, perRound = 50, 4000
	run := func(op func(key []byte) error) float64 {
		var wg sync.WaitGroup
		start := time.Now()
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < perRound/workers; i++ {
					if err := op(benchKey((w*31 + i) % 100)); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		return perRound / time.Since(start).Seconds()
	}
	incr := func(key []byte) error {
		return db.Update(func(tx *Tx) error {
			v, err := tx.Get(key)
			if err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
			return tx.Set(key, append(v, '1')[:min(len(v)+1, 64)])
		})
	}
	set := func(key []byte) error { return db.Set(key, benchValue) }
	var ups, sets []float64
	b.ResetTimer()
	for range max(b.N, 3) {
		ups = append(ups, run(incr))
		sets = append(sets, run(set))
	}
	u, s := medianOf(ups), medianOf(sets)
	b.ReportMetric(u, "update-ops/s")
	b.ReportMetric(s, "set-ops/s")
	b.ReportMetric(u/s, "update/set")
}

// BenchmarkFsyncInPlaceBaseline is BenchmarkFsyncBaseline over a file
// zero-filled and synced beforehand: the write changes no file size, so
// fdatasync has no metadata to commit. The floor under SyncAlways once the
// log writes over a preallocated segment.
func BenchmarkFsyncInPlaceBaseline(b *testing.B) {
	f, err := vfs.OS{}.OpenFile(filepath.Join(b.TempDir(), "baseline"), os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, b.N*len(benchValue))); err != nil {
		b.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := f.Write(benchValue); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
}

// BenchmarkSetAlwaysPreallocated runs 50 writers under SyncAlways (as
// redis-benchmark -c 50 does) against two engines side by side, in
// alternating rounds so that load from elsewhere hits both alike: one whose
// log appends (preallocation off) and one writing over a preallocated
// segment (the default, 64 MiB segments). It reports each one's median
// throughput and records per fsync, and the ratio.
func BenchmarkSetAlwaysPreallocated(b *testing.B) {
	dbs := []*DB{
		benchOpen(b, b.TempDir(), Options{noPrealloc: true}),
		benchOpen(b, b.TempDir(), Options{}),
	}
	names := []string{"append", "prealloc"}
	defer func() {
		for _, db := range dbs {
			db.Close()
		}
	}()
	keys := benchKeys()
	run := func(db *DB, n int) float64 {
		var next atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := next.Add(1); i <= int64(n); i = next.Add(1) {
					if err := db.Set(keys[i%int64(len(keys))], benchValue); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		return float64(n) / time.Since(start).Seconds()
	}
	// Warm up until the second engine writes over zeros.
	deadline := time.Now().Add(30 * time.Second)
	for dbs[1].Stats().PreallocatedSegments == 0 {
		if time.Now().After(deadline) {
			b.Fatal("no preallocated segment after 30 s of writes")
		}
		for _, db := range dbs {
			run(db, 500)
		}
	}
	const rounds = 5
	per := max(b.N/rounds, 1000)
	rps := make([][]float64, len(dbs))
	before := make([]Stats, len(dbs))
	for i, db := range dbs {
		before[i] = db.Stats()
	}
	b.ResetTimer()
	for range rounds {
		for i, db := range dbs {
			rps[i] = append(rps[i], run(db, per))
		}
	}
	b.StopTimer()
	for i, db := range dbs {
		st := db.Stats()
		b.ReportMetric(medianOf(rps[i]), names[i]+"-ops/s")
		if f := st.Fsyncs - before[i].Fsyncs; f > 0 {
			b.ReportMetric(float64(st.Sets-before[i].Sets)/float64(f), names[i]+"-sets/fsync")
		}
	}
	b.ReportMetric(medianOf(rps[1])/medianOf(rps[0]), "prealloc/append")
}
