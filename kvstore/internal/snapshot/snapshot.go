// Package snapshot reads and writes the engine's snapshot files: every key
// and value at one sequence number, in key order, in a checksummed binary
// format of our own.
//
// Invariant: a snapshot is trusted only after its trailing CRC-32C matches
// everything before it, and no length is allocated before it is checked
// against its bound and the bytes left in the file.
//
// Layout (little endian): magic "DKVSNAP\n", version u32, seq u64, count u64,
// then count entries, then a crc32c u32 over every byte before it. A version 3
// entry is uvarint(len key) uvarint(len value) uvarint(expireAt) kind u8 key
// value, expireAt in unix nanoseconds, 0 for none, kind the value's kind (0 a
// string, else a collection whose value is its packed encoding). Versions 2
// (written before collections: no kind, every value a string) and 1 (before
// TTLs: no expireAt either) are still read.
package snapshot

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
)

const (
	magic      = "DKVSNAP\n"
	version    = 3
	versionV2  = 2 // no kind field
	versionV1  = 1 // no expiry field either
	headerSize = 8 + 4 + 8 + 8
	// cancelEvery is how many entries Write writes between context checks.
	cancelEvery = 4096
)

// ErrCorrupt reports a snapshot that fails its checksum or framing rules.
var ErrCorrupt = errors.New("snapshot: corrupt")

// ErrNewerFormat reports an intact snapshot in a format newer than this
// build reads: written by a newer devkit.
var ErrNewerFormat = errors.New("snapshot: written in a newer format")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header is what a snapshot covers.
type Header struct {
	Seq   uint64 // every record up to and including Seq is in the snapshot
	Count uint64 // number of entries
}

// Entry is one key, its value, its expiry (unix nanoseconds, 0: none) and
// the kind of its value (0: a string).
type Entry struct {
	Key      string
	Value    []byte
	ExpireAt int64
	Kind     uint8
}

// Write streams a snapshot to w. next yields entries in key order and
// returns false when done; it must yield exactly h.Count entries.
func Write(ctx context.Context, w io.Writer, h Header, next func() (Entry, bool)) (int64, error) {
	crc := crc32.New(castagnoli)
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 1<<20)
	var hdr [headerSize]byte
	copy(hdr[:], magic)
	binary.LittleEndian.PutUint32(hdr[8:], version)
	binary.LittleEndian.PutUint64(hdr[12:], h.Seq)
	binary.LittleEndian.PutUint64(hdr[20:], h.Count)
	written := int64(headerSize)
	if _, err := bw.Write(hdr[:]); err != nil {
		return written, err
	}
	var n uint64
	var lens [3*binary.MaxVarintLen64 + 1]byte
	for {
		e, ok := next()
		if !ok {
			break
		}
		if n%cancelEvery == 0 {
			if err := ctx.Err(); err != nil {
				return written, err
			}
		}
		l := binary.PutUvarint(lens[:], uint64(len(e.Key)))
		l += binary.PutUvarint(lens[l:], uint64(len(e.Value)))
		l += binary.PutUvarint(lens[l:], uint64(e.ExpireAt))
		lens[l] = e.Kind
		l++
		bw.Write(lens[:l])
		bw.WriteString(e.Key)
		if _, err := bw.Write(e.Value); err != nil {
			return written, err
		}
		written += int64(l + len(e.Key) + len(e.Value))
		n++
	}
	if n != h.Count {
		return written, fmt.Errorf("snapshot: wrote %d entries, header says %d", n, h.Count)
	}
	if err := bw.Flush(); err != nil {
		return written, err
	}
	var sum [4]byte
	binary.LittleEndian.PutUint32(sum[:], crc.Sum32())
	if _, err := w.Write(sum[:]); err != nil {
		return written, err
	}
	return written + 4, nil
}

// Limits bound the lengths the decoder accepts.
type Limits struct {
	MaxKey   int
	MaxValue int
}

// Read decodes a snapshot of size bytes from r, calling fn for each entry
// in order; keys that are not strictly ascending are corruption, so every
// key fn sees is new. Key and value passed to fn are only valid during the call. The
// caller must discard what fn built if Read returns an error: the checksum
// is only known at the end.
func Read(r io.Reader, size int64, lim Limits, fn func(key, value []byte, expireAt int64, kind uint8) error) (Header, error) {
	if size < headerSize+4 {
		return Header{}, fmt.Errorf("%w: %d bytes is shorter than a header", ErrCorrupt, size)
	}
	// The checksum is taken over the body as it is read from the file, in
	// large blocks; entries are parsed from the buffer above it.
	crc := crc32.New(castagnoli)
	body := &bodyReader{r: r, crc: crc, left: size - 4}
	br := bufio.NewReaderSize(body, 1<<20)
	remaining := func() int64 { return body.left + int64(br.Buffered()) }
	var hdr [headerSize]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return Header{}, fmt.Errorf("%w: header: %w", ErrCorrupt, err)
	}
	if string(hdr[:8]) != magic {
		return Header{}, fmt.Errorf("%w: not a devkit snapshot", ErrCorrupt)
	}
	v := binary.LittleEndian.Uint32(hdr[8:])
	if v > version {
		// A newer build's snapshot, if the checksum says it is intact: to be
		// refused, never passed over for an older one as if damaged.
		if _, err := io.Copy(io.Discard, br); err != nil {
			return Header{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		var sum [4]byte
		if _, err := io.ReadFull(r, sum[:]); err != nil || binary.LittleEndian.Uint32(sum[:]) != crc.Sum32() {
			return Header{}, fmt.Errorf("%w: version %d and a checksum mismatch", ErrCorrupt, v)
		}
		return Header{}, fmt.Errorf("%w: version %d; this build reads versions %d to %d: "+
			"run the devkit that wrote it, or a newer one, on this data directory", ErrNewerFormat, v, versionV1, version)
	}
	if v != version && v != versionV2 && v != versionV1 {
		return Header{}, fmt.Errorf("%w: version %d, this build reads versions %d to %d", ErrCorrupt, v, versionV1, version)
	}
	h := Header{Seq: binary.LittleEndian.Uint64(hdr[12:]), Count: binary.LittleEndian.Uint64(hdr[20:])}
	// Every entry takes at least two bytes: a count above that is a lie.
	if h.Count > uint64(remaining())/2 {
		return Header{}, fmt.Errorf("%w: %d entries cannot fit in %d bytes", ErrCorrupt, h.Count, remaining())
	}
	var buf, prev []byte
	for i := uint64(0); i < h.Count; i++ {
		klen, err := binary.ReadUvarint(br)
		if err != nil {
			return h, fmt.Errorf("%w: entry %d: key length: %w", ErrCorrupt, i, err)
		}
		vlen, err := binary.ReadUvarint(br)
		if err != nil {
			return h, fmt.Errorf("%w: entry %d: value length: %w", ErrCorrupt, i, err)
		}
		var expireAt uint64
		if v >= 2 {
			if expireAt, err = binary.ReadUvarint(br); err != nil {
				return h, fmt.Errorf("%w: entry %d: expiry: %w", ErrCorrupt, i, err)
			}
			if expireAt > 1<<63-1 {
				return h, fmt.Errorf("%w: entry %d: expiry %d out of range", ErrCorrupt, i, expireAt)
			}
		}
		var kind byte
		if v >= 3 {
			if kind, err = br.ReadByte(); err != nil {
				return h, fmt.Errorf("%w: entry %d: kind: %w", ErrCorrupt, i, err)
			}
		}
		if left := remaining(); klen > uint64(lim.MaxKey) || vlen > uint64(lim.MaxValue) || klen+vlen > uint64(left) {
			return h, fmt.Errorf("%w: entry %d: key %d and value %d bytes exceed the bounds or the %d bytes left",
				ErrCorrupt, i, klen, vlen, left)
		}
		need := int(klen + vlen)
		var kv []byte
		if need <= br.Size() {
			// In the buffer: no copy. Valid until the next read, after fn.
			if kv, err = br.Peek(need); err != nil {
				return h, fmt.Errorf("%w: entry %d: %w", ErrCorrupt, i, err)
			}
		} else {
			if cap(buf) < need {
				buf = make([]byte, need)
			}
			kv = buf[:need]
			if _, err := io.ReadFull(br, kv); err != nil {
				return h, fmt.Errorf("%w: entry %d: %w", ErrCorrupt, i, err)
			}
		}
		// Keys are unique and in order: readers may insert without lookups.
		if i > 0 && bytes.Compare(prev, kv[:klen]) >= 0 {
			return h, fmt.Errorf("%w: entry %d is not after the one before it", ErrCorrupt, i)
		}
		prev = append(prev[:0], kv[:klen]...)
		if err := fn(kv[:klen:klen], kv[klen:], int64(expireAt), kind); err != nil {
			return h, err
		}
		if need <= br.Size() {
			if _, err := br.Discard(need); err != nil { // Peek returned them: cannot fail
				return h, fmt.Errorf("%w: entry %d: %w", ErrCorrupt, i, err)
			}
		}
	}
	if n := remaining(); n != 0 {
		return h, fmt.Errorf("%w: %d unexpected bytes after the last entry", ErrCorrupt, n)
	}
	want := crc.Sum32()
	var sum [4]byte
	if _, err := io.ReadFull(r, sum[:]); err != nil {
		return h, fmt.Errorf("%w: checksum: %w", ErrCorrupt, err)
	}
	if binary.LittleEndian.Uint32(sum[:]) != want {
		return h, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	return h, nil
}

// bodyReader reads the body (everything before the checksum) from r, no
// further, feeding the checksum as it goes.
type bodyReader struct {
	r    io.Reader
	crc  hash.Hash32
	left int64
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	b.crc.Write(p[:n])
	return n, err
}
