package kvstore

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// modelEntry is what a plain map says a key holds.
type modelEntry struct {
	value    []byte
	expireAt int64
}

func checkAgainstModel(t *testing.T, m *memtable, model map[string]modelEntry, keys []string) {
	t.Helper()
	for _, k := range keys {
		e, ok := m.get(nil, []byte(k))
		want, wok := model[k]
		if ok != wok || (ok && (!bytes.Equal(e.value, want.value) || e.expireAt != want.expireAt)) {
			t.Fatalf("key %q: memtable %v/%d bytes/exp %d, model %v/%d bytes/exp %d", k, ok, len(e.value), e.expireAt, wok, len(want.value), want.expireAt)
		}
	}
	if int(m.keys.Load()) != len(model) {
		t.Fatalf("memtable counts %d keys, model has %d", m.keys.Load(), len(model))
	}
	var sorted []string
	for k := range model {
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)
	page, _ := m.scan(nil, nil, len(model)+1, 0)
	if len(page) != len(sorted) {
		t.Fatalf("scan returned %d entries, model has %d", len(page), len(sorted))
	}
	for i, e := range page {
		if string(e.Key) != sorted[i] || !bytes.Equal(e.Value, model[sorted[i]].value) {
			t.Fatalf("scan entry %d = %q, want %q", i, e.Key, sorted[i])
		}
	}
}

func TestMemtable_MatchesAMapUnderRandomSetsDeletesFlushesAndSnapshots(t *testing.T) {
	// Views held to the end keep every overwrite out of place; without
	// them, same-class overwrites rewrite their slot in place.
	for _, holdViews := range []bool{true, false} {
		t.Run(fmt.Sprintf("views=%v", holdViews), func(t *testing.T) { testMemtableAgainstModel(t, holdViews) })
	}
}

func testMemtableAgainstModel(t *testing.T, holdViews bool) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := newMemtable()
	model := map[string]modelEntry{}
	var keys []string
	for i := 0; i < 600; i++ {
		keys = append(keys, fmt.Sprintf("key-%d", i*7919%1000))
	}
	value := func() []byte {
		n := rng.IntN(700)
		if rng.IntN(2) == 0 {
			n = 100 // same-size overwrites: the in-place path
		}
		if rng.IntN(500) == 0 {
			n = maxClassLen + rng.IntN(1000) // a record with a chunk of its own
		}
		return bytes.Repeat([]byte{byte(rng.IntN(256))}, n)
	}
	seq := uint64(0)
	var views []struct {
		view frozen
		want map[string]modelEntry
	}
	for round := 0; round < 400; round++ {
		var muts []mutation
		for n := rng.IntN(40) + 1; n > 0; n-- {
			seq++
			k := []byte(keys[rng.IntN(len(keys))])
			switch r := rng.IntN(100); {
			case r < 60:
				mu := mutation{key: k, value: value(), seq: seq}
				if rng.IntN(4) == 0 {
					mu.expireAt = int64(seq)
				}
				muts = append(muts, mu)
				model[string(k)] = modelEntry{value: mu.value, expireAt: mu.expireAt}
			case r < 99:
				muts = append(muts, mutation{key: k, del: true, seq: seq})
				delete(model, string(k))
			default:
				muts = append(muts, mutation{flush: true, seq: seq})
				clear(model)
			}
		}
		m.apply(muts, seq)
		if round%50 == 0 && holdViews {
			views = append(views, struct {
				view frozen
				want map[string]modelEntry
			}{m.freeze(), maps(model)})
		}
		if round%10 == 0 {
			checkAgainstModel(t, m, model, keys)
		}
	}
	checkAgainstModel(t, m, model, keys)
	// Frozen views still read what was there when they were taken, though
	// their records were overwritten and freed since.
	for i, v := range views {
		got := map[string]modelEntry{}
		v.view.each(func(k string, val []byte, _ Kind, exp int64) bool {
			got[k] = modelEntry{value: bytes.Clone(val), expireAt: exp}
			return true
		})
		if len(got) != len(v.want) {
			t.Fatalf("view %d holds %d keys, had %d when frozen", i, len(got), len(v.want))
		}
		for k, w := range v.want {
			if !bytes.Equal(got[k].value, w.value) {
				t.Fatalf("view %d: key %q changed after the freeze", i, k)
			}
		}
		v.view.release()
	}
}

func maps(m map[string]modelEntry) map[string]modelEntry {
	out := make(map[string]modelEntry, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestMemtable_OverwritesReuseTheirSlots(t *testing.T) {
	m := newMemtable()
	val := bytes.Repeat([]byte("v"), 100)
	// In groups of 100: a group's new records are written before its old
	// ones are freed, so one group's worth is the transient overhead.
	write := func(seq uint64) {
		for i := 0; i < 20000; i += 100 {
			var muts []mutation
			for j := i; j < i+100; j++ {
				muts = append(muts, mutation{key: fmt.Appendf(nil, "key:%012d", j), value: val, seq: seq})
			}
			m.apply(muts, seq)
		}
	}
	write(1)
	chunks, slots := len(*m.arena.chunks.Load()), m.arena.slotBytes.Load()
	for round := uint64(2); round < 6; round++ {
		write(round)
	}
	if c, s := len(*m.arena.chunks.Load()), m.arena.slotBytes.Load(); c != chunks || s != slots {
		t.Fatalf("after 4 overwrites of every key: %d chunks, %d slot bytes (were %d, %d): overwrites grow the arena", c, s, chunks, slots)
	}
	// While a snapshot holds the arena, overwrites go to new slots; once it
	// is released, their old slots are reused.
	view := m.freeze()
	write(6)
	view.release()
	grown := len(*m.arena.chunks.Load())
	write(7)
	write(8)
	if c := len(*m.arena.chunks.Load()); c != grown {
		t.Fatalf("slots freed while a snapshot held them were not reused after it: %d chunks, then %d", grown, c)
	}
}

func TestLoader_OverwritingLogDoesNotHoldEveryVersion(t *testing.T) {
	m := newMemtable()
	ld := m.startLoad(0)
	val := bytes.Repeat([]byte("v"), 100)
	const keys, rounds = 20000, 30
	for r := 0; r < rounds; r++ {
		for i := 0; i < keys; i++ {
			ld.add(mutation{key: fmt.Appendf(nil, "key:%012d", i), value: val, seq: uint64(r*keys + i + 1)})
		}
	}
	ld.finish(rounds * keys)
	// One version of every key is 20000 x 144 bytes, under one 4 MiB chunk;
	// the loader holds at most loadBarrier*loadChunk records more (~2.3
	// chunks); holding all 30 versions would take 21 chunks.
	if c := len(*m.arena.chunks.Load()); c > 6 {
		t.Fatalf("loading %d overwrites of %d keys used %d arena chunks: every version was held", rounds, keys, c)
	}
	if m.keys.Load() != keys {
		t.Fatalf("%d keys, want %d", m.keys.Load(), keys)
	}
	page, _ := m.scan(nil, nil, keys+1, 0)
	if len(page) != keys {
		t.Fatalf("tree holds %d keys, want %d", len(page), keys)
	}
}

func TestStats_MemoryBytesCoversTheData(t *testing.T) {
	db := openT(t, t.TempDir(), Options{Sync: SyncNone})
	defer db.Close()
	var b Batch
	for i := 0; i < 50000; i++ {
		b.Set(fmt.Appendf(nil, "key:%012d", i), bytes.Repeat([]byte("v"), 100))
	}
	if err := db.Write(&b); err != nil {
		t.Fatal(err)
	}
	st := db.Stats()
	if st.MemoryBytes < st.DataBytes || st.MemoryBytes > 2*st.DataBytes+8<<20 {
		t.Fatalf("MemoryBytes %d for %d bytes of keys and values", st.MemoryBytes, st.DataBytes)
	}
}

// BenchmarkMemtableOverwrite applies one-key groups that overwrite random
// keys of 100k with same-size values: the memtable's share of a SET.
func BenchmarkMemtableOverwrite(b *testing.B) {
	m := newMemtable()
	keys := make([][]byte, 100_000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key:%012d", i)
		m.apply([]mutation{{key: keys[i], value: benchValue, seq: uint64(i + 1)}}, uint64(i+1))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	muts := make([]mutation, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		muts[0] = mutation{key: keys[rng.IntN(len(keys))], value: benchValue, seq: uint64(len(keys) + i + 1)}
		m.apply(muts, muts[0].seq)
	}
}
