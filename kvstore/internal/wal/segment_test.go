package wal

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devkit-go/devkit/kvstore/internal/vfs"
)

func TestNonZeroEnd_FindsTheLastNonZeroByteAcrossChunkBoundaries(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int
		at   int // the only non-zero byte; -1: none
		want int
	}{
		{"empty", 0, -1, 0},
		{"all zeros", 10000, -1, 0},
		{"first byte", 10000, 0, 1},
		{"last byte", 10000, 9999, 10000},
		{"just before a 4 KiB chunk from the end", 3*4096 + 5, 4 + 4096, 4096 + 5},
		{"at a 4 KiB chunk from the end", 3*4096 + 5, 5 + 4096, 4096 + 6},
		{"exact chunks, last of the first", 2 * 4096, 4095, 4096},
		{"short buffer", 7, 3, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := make([]byte, tc.size)
			if tc.at >= 0 {
				b[tc.at] = 0x80
			}
			if got := NonZeroEnd(b); got != tc.want {
				t.Fatalf("NonZeroEnd = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestValidRecordAfter_FindsARecordJustBeforeTheZeroTail(t *testing.T) {
	buf := AppendPreallocatedHeader(nil, 1)
	buf = AppendRecord(buf, Record{Type: TypeSet, Seq: 1, Key: []byte("a"), Value: []byte("1")})
	damaged := len(buf)
	buf = append(buf, 0xAB, 0xCD)
	second := len(buf)
	// A value that ends in zeros: the record's last bytes are zero too.
	buf = AppendRecord(buf, Record{Type: TypeSet, Seq: 2, Key: []byte("b"), Value: make([]byte, 40)})
	buf = append(buf, make([]byte, 8192)...)
	off, ok := ValidRecordAfter(buf, damaged, 1, MaxPayload(1024, 1024))
	if !ok || off != second {
		t.Fatalf("ValidRecordAfter = %d, %v; want %d, true", off, ok, second)
	}
}

func TestInstallPrepared_NamesAFileWithAPreallocatedHeaderAndWritesInPlace(t *testing.T) {
	dir := t.TempDir()
	fs := vfs.OS{}
	tmp := filepath.Join(dir, "next.tmp")
	if err := PrepareSegment(context.Background(), fs, tmp, 3<<20+7); err != nil {
		t.Fatal(err)
	}
	w, err := InstallPrepared(fs, dir, tmp, 42)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("the temp name is still there: %v", err)
	}
	rec := AppendRecord(nil, Record{Type: TypeSet, Seq: 42, Key: []byte("k"), Value: []byte("v")})
	if _, err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	hsize := len(AppendPreallocatedHeader(nil, 42))
	if !w.Preallocated() || w.Size() != int64(hsize+len(rec)) {
		t.Fatalf("preallocated %v, size %d; want true, %d", w.Preallocated(), w.Size(), hsize+len(rec))
	}
	b, err := os.ReadFile(filepath.Join(dir, SegmentName(42)))
	if err != nil {
		t.Fatal(err)
	}
	h, err := DecodeHeader(b)
	if err != nil || h.FirstSeq != 42 || h.Size != hsize || !h.Preallocated() || len(b) != 3<<20+7 {
		t.Fatalf("header: %+v, %v, %d bytes; want 42, a preallocated header, %d bytes", h, err, len(b), 3<<20+7)
	}
	if !bytes.Equal(b[hsize:hsize+len(rec)], rec) || NonZeroEnd(b) != hsize+len(rec) {
		t.Fatal("the record was not written over the zeros right after the header")
	}
	if err := w.TrimTail(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, SegmentName(42))); err != nil || fi.Size() != w.Size() || w.Preallocated() {
		t.Fatalf("after TrimTail: %v, %d bytes, preallocated %v; want %d bytes", err, fi.Size(), w.Preallocated(), w.Size())
	}
}

func TestPrepareSegment_StopsAndRemovesTheFileWhenCancelled(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, "next.tmp")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := PrepareSegment(ctx, vfs.OS{}, tmp, 8<<20); err == nil {
		t.Fatal("a cancelled preparation succeeded")
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("a cancelled preparation left its file: %v", err)
	}
}

// Only a whole aligned sector of zeros counts: a run as long but across a
// sector boundary, or ending at to, does not.
func TestZeroSectorIn_OnlyAWholeAlignedSector(t *testing.T) {
	b := bytes.Repeat([]byte{1}, 4*SectorSize)
	zero := func(from, to int) []byte {
		c := bytes.Clone(b)
		clear(c[from:to])
		return c
	}
	for _, tc := range []struct {
		name     string
		b        []byte
		from, to int
		want     bool
	}{
		{"aligned sector", zero(SectorSize, 2*SectorSize), 0, len(b), true},
		{"a sector's worth across a boundary", zero(SectorSize+1, 2*SectorSize+1), 0, len(b), false},
		{"aligned sector past to", zero(2*SectorSize, 3*SectorSize), 0, 3*SectorSize - 1, false},
		{"aligned sector before from", zero(SectorSize, 2*SectorSize), SectorSize + 1, len(b), false},
		{"from inside a zero run reaching an aligned sector", zero(SectorSize-7, 2*SectorSize), SectorSize - 7, len(b), true},
		{"no zeros", b, 0, len(b), false},
	} {
		if got := ZeroSectorIn(tc.b, tc.from, tc.to); got != tc.want {
			t.Errorf("%s: ZeroSectorIn = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// collectionSegment is a segment in this build's format whose only record
// is a batch with a collection delta op: what a reader of the formats
// before collections cannot decode.
func collectionSegment(firstSeq uint64) []byte {
	buf := AppendHeader(nil, firstSeq)
	return AppendBatchRecord(buf, firstSeq, []Op{{Type: TypeDelta, Key: []byte("h"), Value: []byte{2, 1, 2, 3}}},
		func(int, int, int, int, int) {})
}

func TestSegmentHeader_ACollectionFormatSegmentIsRefusedByAReaderOfTheOlderFormatsNotTakenForATornOne(t *testing.T) {
	buf := collectionSegment(7)
	_, err := decodeHeader(buf, VersionPreallocated)
	if !errors.Is(err, ErrNewerFormat) {
		t.Fatalf("a reader of formats 1 and 2: %v; want ErrNewerFormat", err)
	}
	for _, want := range []string{"format 3", `"devkit log format 3, written by kvstore devel"`, "reads formats 1 to 2",
		"run the devkit that wrote it, or a newer one"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	// A reader of formats 1 and 2 removes a newest segment whose header it
	// refuses when no record in it decodes (a crash while it was created).
	// The format record decodes in every format, so that reader refuses the
	// directory instead.
	off, ok := ValidRecordAfter(buf, -1, 6, MaxPayload(1024, 1024))
	if !ok || off != HeaderSize {
		t.Fatalf("ValidRecordAfter = %d, %v; want the format record at %d", off, ok, HeaderSize)
	}
	r, _, err := DecodeRecord(buf[off:], MaxPayload(1024, 1024))
	if err != nil || r.Type != TypeDelete || r.Seq != 7 {
		t.Fatalf("format record: %+v, %v; want a delete with sequence 7", r, err)
	}
}

func TestSegmentHeader_ThisBuildReadsEveryFormatAndFindsTheFirstRecordAfterTheHeader(t *testing.T) {
	for _, tc := range []struct {
		version  uint32
		prealloc bool
	}{{VersionPlain, false}, {VersionPreallocated, true}, {Version, false}, {VersionPreallocatedColl, true}} {
		buf := appendHeader(nil, 9, tc.version)
		hsize := len(buf)
		buf = AppendRecord(buf, Record{Type: TypeSet, Seq: 9, Key: []byte("k"), Value: []byte("v")})
		h, err := DecodeHeader(buf)
		if err != nil || h.FirstSeq != 9 || h.Version != tc.version || h.Size != hsize || h.Preallocated() != tc.prealloc {
			t.Fatalf("version %d: %+v, %v; want first 9, size %d, preallocated %v", tc.version, h, err, hsize, tc.prealloc)
		}
		if tc.version < Version && h.Size != HeaderSize {
			t.Fatalf("version %d: header of %d bytes; the formats before collections have %d", tc.version, h.Size, HeaderSize)
		}
		if r, _, err := DecodeRecord(buf[h.Size:], 1024); err != nil || string(r.Key) != "k" {
			t.Fatalf("version %d: first record %+v, %v", tc.version, r, err)
		}
	}
}

func TestSegmentHeader_AFormatNewerThanThisBuildIsRefusedNamingItsWriter(t *testing.T) {
	buf := appendHeader(nil, 3, NewestVersion+1)[:HeaderSize]
	buf = AppendRecord(buf, Record{Type: TypeDelete, Seq: 3, Key: []byte("devkit log format 5, written by kvstore v9.9.9")})
	_, err := DecodeHeader(buf)
	if !errors.Is(err, ErrNewerFormat) || errors.Is(err, ErrBadHeader) || !strings.Contains(err.Error(), "kvstore v9.9.9") {
		t.Fatalf("DecodeHeader = %v; want ErrNewerFormat naming kvstore v9.9.9", err)
	}
	// A format record cut short is a torn header, not a newer format.
	if _, err := DecodeHeader(AppendHeader(nil, 3)[:HeaderSize+5]); !errors.Is(err, ErrBadHeader) {
		t.Fatalf("a torn format record: %v; want ErrBadHeader", err)
	}
}
