package kvstore

import (
	"encoding/binary"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
)

// The arena holds the memtable's records — key, value, expiry and version —
// in large pointer-free chunks, addressed by 48-bit references, so a key
// costs the garbage collector nothing and no allocation of its own.
// Records live in slots of size classes; a freed slot is reused by the next
// record of its class, so overwrites do not grow the heap.
//
// Invariant: a slot is reused only when nothing can still read it — no
// index points to it (the leader frees a record after removing it from the
// hash index and the tree, under their locks, so no reader holds it), and
// no frozen view (a snapshot being written) or load in progress exists
// that was taken while it was live: frees during a hold wait in deferred
// until the last hold is released. Only the leader (or the loader) writes.
//
// Record layout: seq u64, expireAt i64, kind<<24|klen u32, vlen u32, key,
// value. The kind (kind.go) takes the top byte of the key length: keys are
// at most MaxKeySizeLimit (64 KiB) long.
//
// A big collection (bigcoll.go) is a Go object, which the pointer-free
// chunks cannot hold: its record has bigFlag in the kind byte and, as its
// value, a handle into the arena's table of them. The handle lives as long
// as the slot (freed with it, deferred with it while a hold exists), so a
// frozen view resolves its records' handles to the versions it froze.

type ref uint64

const (
	chunkBits   = 22
	chunkSize   = 1 << chunkBits // 4 MiB
	recordHead  = 8 + 8 + 4 + 4
	refBits     = 48
	refMask     = 1<<refBits - 1
	maxClassLen = chunkSize / 4 // larger records get a chunk of their own
)

// sizeClasses are the slot sizes: every multiple of 8 up to 512 bytes (so
// records of one size waste nothing), then steps of 1/8 up to maxClassLen.
var sizeClasses = func() []int {
	var s []int
	for n := 8; n <= 512; n += 8 {
		s = append(s, n)
	}
	for n := 512; n < maxClassLen; {
		n += n / 8
		n = (n + 7) &^ 7
		s = append(s, min(n, maxClassLen))
	}
	return s
}()

func classOf(n int) int { return sort.SearchInts(sizeClasses, n) }

type arena struct {
	// chunks is replaced (copied) when a chunk is added, so readers load it
	// without a lock.
	chunks atomic.Pointer[[][]byte]

	mu       sync.Mutex // guards the allocation state below
	cur      int        // chunk being filled
	off      int        // next free byte in it
	free     [][]ref    // per class
	holds    int
	deferred []ref
	// bigFree are chunk indexes of large records, reused for the next one.
	bigFree []int
	// slotBytes is the memory held by live slots.
	slotBytes atomic.Int64

	// bigs is the table of big collections: pages of handles, replaced
	// (copied) when a page is added, so readers load it without a lock.
	bigs       atomic.Pointer[[]*bigPage]
	handleFree []uint64 // free handles
	bigNext    uint64   // next handle never used
	bigCount   atomic.Int64
	bigBytes   atomic.Int64 // the big collections' estimated heap (heapEstimate)
}

// bigFlag marks, in a record's kind byte, a big collection's record.
const bigFlag = 0x80

const bigPageSize = 1024

type bigPage struct {
	colls [bigPageSize]atomic.Pointer[bigColl]
	// est is the heap estimate each handle added to bigBytes (the replay
	// changes its collections in place, so it is kept, not recomputed);
	// guarded by mu.
	est [bigPageSize]int64
}

func newArena() *arena {
	a := &arena{free: make([][]ref, len(sizeClasses)), cur: -1}
	empty := [][]byte{}
	a.chunks.Store(&empty)
	pages := []*bigPage{}
	a.bigs.Store(&pages)
	a.bigNext = 1 // handle 0 means none
	return a
}

func recordSize(key, value []byte) int { return recordHead + len(key) + len(value) }

// alloc stores a record and returns its reference; a big collection (big
// not nil) is stored by handle, value ignored. Leader only.
func (a *arena) alloc(key, value []byte, kind Kind, big *bigColl, expireAt int64, seq uint64) ref {
	var hb [8]byte
	if big != nil {
		value, kind = a.newHandle(&hb, big), kind|bigFlag
	}
	n := recordSize(key, value)
	a.mu.Lock()
	r := a.slot(n)
	a.mu.Unlock()
	putRecord(a.bytes(r, n), key, value, kind, expireAt, seq)
	return r
}

// newHandle puts big in the table and returns its handle, encoded in hb.
func (a *arena) newHandle(hb *[8]byte, big *bigColl) []byte {
	a.mu.Lock()
	var h uint64
	if l := len(a.handleFree); l > 0 {
		h = a.handleFree[l-1]
		a.handleFree = a.handleFree[:l-1]
	} else {
		h = a.bigNext
		a.bigNext++
		if pages := *a.bigs.Load(); int(h/bigPageSize) >= len(pages) {
			next := append(slices.Clip(pages), new(bigPage))
			a.bigs.Store(&next)
		}
	}
	est := big.heapEstimate()
	a.page(h).est[h%bigPageSize] = est
	a.mu.Unlock()
	a.handleSlot(h).Store(big)
	a.bigCount.Add(1)
	a.bigBytes.Add(est)
	binary.LittleEndian.PutUint64(hb[:], h)
	return hb[:]
}

func (a *arena) page(h uint64) *bigPage { return (*a.bigs.Load())[h/bigPageSize] }

func (a *arena) handleSlot(h uint64) *atomic.Pointer[bigColl] {
	return &a.page(h).colls[h%bigPageSize]
}

// big is the big collection the record at r holds, nil for another record.
func (a *arena) big(r ref) *bigColl {
	b := a.at(r)
	if binary.LittleEndian.Uint32(b[16:])>>24&bigFlag == 0 {
		return nil
	}
	_, v, _, _ := a.record(r)
	return a.handleSlot(binary.LittleEndian.Uint64(v)).Load()
}

// freeHandle drops the big collection of the record at r, if it is one;
// mu held.
func (a *arena) freeHandle(r ref) {
	if binary.LittleEndian.Uint32(a.at(r)[16:])>>24&bigFlag == 0 {
		return
	}
	_, v, _, _ := a.record(r)
	h := binary.LittleEndian.Uint64(v)
	a.bigBytes.Add(-a.page(h).est[h%bigPageSize])
	a.handleSlot(h).Store(nil)
	a.handleFree = append(a.handleFree, h)
	a.bigCount.Add(-1)
}

// klenMask takes the key length out of the field that holds the kind too.
const klenMask = 1<<24 - 1

// putRecord encodes a record into b, which holds recordSize(key, value) bytes.
func putRecord(b, key, value []byte, kind Kind, expireAt int64, seq uint64) {
	binary.LittleEndian.PutUint64(b[0:], seq)
	binary.LittleEndian.PutUint64(b[8:], uint64(expireAt))
	binary.LittleEndian.PutUint32(b[16:], uint32(len(key))|uint32(kind)<<24)
	binary.LittleEndian.PutUint32(b[20:], uint32(len(value)))
	copy(b[recordHead:], key)
	copy(b[recordHead+len(key):], value)
}

// slot finds room for n bytes. Called with mu held.
func (a *arena) slot(n int) ref {
	if n > maxClassLen {
		return a.bigSlot(n)
	}
	c := classOf(n)
	size := sizeClasses[c]
	a.slotBytes.Add(int64(size))
	if l := a.free[c]; len(l) > 0 {
		r := l[len(l)-1]
		a.free[c] = l[:len(l)-1]
		return r
	}
	if a.cur < 0 || a.off+size > chunkSize {
		a.cur = a.addChunk(make([]byte, chunkSize))
		a.off = 0
		if a.cur == 0 {
			a.off = 8 // ref 0 means "none"
		}
	}
	r := ref(a.cur)<<chunkBits | ref(a.off)
	a.off += size
	return r
}

// bigSlot gives a large record a chunk of its own.
func (a *arena) bigSlot(n int) ref {
	a.slotBytes.Add(int64(n))
	buf := make([]byte, n)
	if l := len(a.bigFree); l > 0 {
		i := a.bigFree[l-1]
		a.bigFree = a.bigFree[:l-1]
		a.setChunk(i, buf)
		return ref(i) << chunkBits
	}
	return ref(a.addChunk(buf)) << chunkBits
}

func (a *arena) addChunk(c []byte) int {
	old := *a.chunks.Load()
	next := make([][]byte, len(old)+1)
	copy(next, old)
	next[len(old)] = c
	a.chunks.Store(&next)
	return len(old)
}

func (a *arena) setChunk(i int, c []byte) {
	old := *a.chunks.Load()
	next := make([][]byte, len(old))
	copy(next, old)
	next[i] = c
	a.chunks.Store(&next)
}

// bytes is the n bytes at r.
func (a *arena) bytes(r ref, n int) []byte {
	c := (*a.chunks.Load())[r>>chunkBits]
	off := int(r & (chunkSize - 1))
	return c[off : off+n : off+n]
}

// at is the chunk from r's record on.
func (a *arena) at(r ref) []byte {
	return (*a.chunks.Load())[r>>chunkBits][r&(chunkSize-1):]
}

// record returns the parts of the record at r; key and value alias the arena.
func (a *arena) record(r ref) (key, value []byte, expireAt int64, seq uint64) {
	b := a.at(r)
	seq = binary.LittleEndian.Uint64(b[0:])
	expireAt = int64(binary.LittleEndian.Uint64(b[8:]))
	klen := int(binary.LittleEndian.Uint32(b[16:]) & klenMask)
	vlen := int(binary.LittleEndian.Uint32(b[20:]))
	end := recordHead + klen + vlen
	return b[recordHead : recordHead+klen : recordHead+klen], b[recordHead+klen : end : end], expireAt, seq
}

func (a *arena) key(r ref) []byte {
	b := a.at(r)
	end := recordHead + int(binary.LittleEndian.Uint32(b[16:])&klenMask)
	return b[recordHead:end:end]
}

// kind is the kind of value the record at r holds.
func (a *arena) kind(r ref) Kind {
	return Kind(binary.LittleEndian.Uint32(a.at(r)[16:]) >> 24 &^ bigFlag)
}

// held reports whether a frozen view or a load holds the arena.
func (a *arena) held() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.holds > 0
}

// rewrite stores a new version of the record at r in its own slot when the
// new record falls in the same size class, and reports whether it did;
// oldValueLen is set to the length of the value it replaced. Leader only,
// under the locks that keep readers off the slot.
// A big collection's handle is freed at once (nothing holds the arena).
func (a *arena) rewrite(r ref, key, value []byte, kind Kind, big *bigColl, expireAt int64, seq uint64, oldValueLen *int) bool {
	k, v, _, _ := a.record(r)
	*oldValueLen = len(v)
	if big != nil {
		value = make([]byte, 8) // the handle's size
	}
	oldSize, newSize := recordSize(k, v), recordSize(key, value)
	if oldSize > maxClassLen || newSize > maxClassLen || classOf(oldSize) != classOf(newSize) {
		return false
	}
	a.mu.Lock()
	a.freeHandle(r)
	a.mu.Unlock()
	if big != nil {
		var hb [8]byte
		value, kind = a.newHandle(&hb, big), kind|bigFlag
	}
	putRecord(a.bytes(r, newSize), key, value, kind, expireAt, seq)
	return true
}

// release frees the slot at r, or defers it while a hold exists. Leader only.
func (a *arena) release(r ref) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.holds > 0 {
		a.deferred = append(a.deferred, r)
		return
	}
	a.freeLocked(r)
}

func (a *arena) freeLocked(r ref) {
	a.freeHandle(r)
	k, v, _, _ := a.record(r)
	n := recordSize(k, v)
	if n > maxClassLen {
		a.slotBytes.Add(-int64(n))
		i := int(r >> chunkBits)
		a.setChunk(i, nil) // the garbage collector takes it back
		a.bigFree = append(a.bigFree, i)
		return
	}
	c := classOf(n)
	a.slotBytes.Add(-int64(sizeClasses[c]))
	a.free[c] = append(a.free[c], r)
}

// hold keeps every slot live now from reuse until the returned function is
// called (once).
func (a *arena) hold() (unhold func()) {
	a.mu.Lock()
	a.holds++
	a.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.holds--
			if a.holds == 0 {
				for _, r := range a.deferred {
					a.freeLocked(r)
				}
				a.deferred = nil
			}
		})
	}
}
