package kvstore

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkApplyNoSyncWait is the engine's part of redis-benchmark's SET
// against the RESP server (-c 50 -d 100 -r 100000): 50 writers, each
// applying one-SET batches with NoSyncWait and then waiting, as a
// connection does per request, on keys drawn at random from 100,000
// ("key:" and 12 digits, as redis-benchmark's -r makes them), so most
// early SETs add a key and later ones overwrite one. Under SyncNone.
func BenchmarkApplyNoSyncWait(b *testing.B) {
	const writers, keyspace = 50, 100_000
	db := benchOpen(b, b.TempDir(), Options{Sync: SyncNone, CompactionThreshold: -1})
	defer db.Close()
	keys := make([][]byte, keyspace)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key:%012d", i)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			var batch Batch
			for next.Add(1) <= int64(b.N) {
				batch.Reset()
				batch.Set(keys[rng.IntN(keyspace)], benchValue)
				wait, err := db.Apply(&batch, WriteOptions{NoSyncWait: true})
				if err == nil {
					err = wait()
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
}

// TestApplyNoSyncWaitAllocatesNoClosure checks that writes joining an open
// group share its wait function: a NoSyncWait Apply allocates nothing of
// its own (the group's buffer grows now and then, amortised well under one
// allocation a write), and waiting for the last write waits for them all.
func TestApplyNoSyncWaitAllocatesNoClosure(t *testing.T) {
	db, err := Open(t.TempDir(), Options{Sync: SyncNone, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	keys := make([][]byte, 64)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key:%012d", i)
	}
	var batch Batch
	var waits []func() error
	i := 0
	apply := func() {
		batch.Reset()
		batch.Set(keys[i%len(keys)], benchValue)
		i++
		wait, err := db.Apply(&batch, WriteOptions{NoSyncWait: true})
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, wait)
	}
	waits = make([]func() error, 0, 4096)
	apply() // opens the group
	if n := testing.AllocsPerRun(1000, apply); n >= 0.5 {
		t.Errorf("a NoSyncWait Apply joining an open group allocates %.2f times; want none of its own", n)
	}
	if err := waits[len(waits)-1](); err != nil {
		t.Fatal(err)
	}
	for _, w := range waits {
		if err := w(); err != nil {
			t.Fatal(err)
		}
	}
	if got := db.Stats().Keys; got != 64 {
		t.Errorf("after the last wait: %d keys, want 64", got)
	}
}

// BenchmarkMemtableApplyNewKeys applies groups of 50 SETs of keys new to
// the memtable, in random order, as redis-benchmark -r makes them: the
// cost of adding a key to both indexes.
func BenchmarkMemtableApplyNewKeys(b *testing.B) {
	keys := make([][]byte, b.N)
	for i, k := range rand.New(rand.NewPCG(5, 6)).Perm(b.N) {
		keys[i] = fmt.Appendf(nil, "key:%012d", k)
	}
	m := newMemtable()
	muts := make([]mutation, 0, 50)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range keys {
		muts = append(muts, mutation{key: keys[i], value: benchValue, seq: uint64(i + 1)})
		if len(muts) == cap(muts) || i == len(keys)-1 {
			m.apply(muts, uint64(i+1))
			muts = muts[:0]
		}
	}
}

// TestMemtable_OverwriteOfTheSameSizeLeavesTheTreeAlone: redis-benchmark's
// SETs overwrite keys with values of the same size; such an overwrite
// rewrites the record in its slot and must not touch the ordered index
// (same references, in the same order), yet a scan sees the new values.
func TestMemtable_OverwriteOfTheSameSizeLeavesTheTreeAlone(t *testing.T) {
	m := newMemtable()
	const n = 2000
	write := func(seq uint64, fill byte) {
		var muts []mutation
		for i := range n {
			muts = append(muts, mutation{key: fmt.Appendf(nil, "key:%012d", i), value: bytes.Repeat([]byte{fill}, 100), seq: seq})
		}
		m.apply(muts, seq)
	}
	refs := func() []ref {
		var out []ref
		m.tree.Ascend(func(r ref) bool { out = append(out, r); return true })
		return out
	}
	write(1, 'a')
	before := refs()
	write(2, 'b')
	if after := refs(); !slices.Equal(before, after) {
		t.Fatal("a same-size overwrite changed the B-tree's items")
	}
	page, _ := m.scan(nil, nil, n+1, 0)
	if len(page) != n || page[0].Value[0] != 'b' || page[n-1].Value[0] != 'b' {
		t.Fatalf("scan after the overwrite: %d entries, want %d with the new values", len(page), n)
	}
}
