package wal

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
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
	if !w.Preallocated() || w.Size() != int64(HeaderSize+len(rec)) {
		t.Fatalf("preallocated %v, size %d; want true, %d", w.Preallocated(), w.Size(), HeaderSize+len(rec))
	}
	b, err := os.ReadFile(filepath.Join(dir, SegmentName(42)))
	if err != nil {
		t.Fatal(err)
	}
	first, err := DecodeHeader(b)
	if err != nil || first != 42 || !Preallocated(b) || len(b) != 3<<20+7 {
		t.Fatalf("header: %d, %v, preallocated %v, %d bytes; want 42, a version-2 header, %d bytes", first, err, Preallocated(b), len(b), 3<<20+7)
	}
	if !bytes.Equal(b[HeaderSize:HeaderSize+len(rec)], rec) || NonZeroEnd(b) != HeaderSize+len(rec) {
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
