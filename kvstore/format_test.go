package kvstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devkit-go/devkit/kvstore/internal/wal"
)

// olderFormatSegment is a segment as a build before collections wrote it:
// a header of the given version (1 or 2) and no format record, then sets of
// k000.. from seq firstSeq on, then zeroTail zero bytes.
func olderFormatSegment(version uint32, firstSeq uint64, sets, zeroTail int) []byte {
	buf := []byte("DKVWAL\r\n")
	buf = binary.LittleEndian.AppendUint32(buf, version)
	buf = binary.LittleEndian.AppendUint64(buf, firstSeq)
	buf = binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf, crc32.MakeTable(crc32.Castagnoli)))
	for i := range sets {
		buf = wal.AppendRecord(buf, wal.Record{Type: wal.TypeSet, Seq: firstSeq + uint64(i),
			Key: fmt.Appendf(nil, "k%03d", i), Value: fmt.Appendf(nil, "value-%03d", i)})
	}
	return append(buf, make([]byte, zeroTail)...)
}

func TestFormat_OlderFormatSegmentsRecoverAndAreNeverExtendedWithCollectionOps(t *testing.T) {
	for _, tc := range []struct {
		name           string
		version        uint32
		sets, zeroTail int
	}{
		{"format 1", wal.VersionPlain, 5, 0},
		{"format 2 with a zero tail", wal.VersionPreallocated, 5, 4096},
		{"format 1 with no record", wal.VersionPlain, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			old := olderFormatSegment(tc.version, 1, tc.sets, tc.zeroTail)
			oldPath := filepath.Join(dir, wal.SegmentName(1))
			if err := os.WriteFile(oldPath, old, 0o644); err != nil {
				t.Fatal(err)
			}
			db := openT(t, dir, Options{Sync: SyncAlways})
			wantPrefix(t, db, tc.sets, tc.sets)
			if _, err := db.HSet(b("h"), b("f"), b("v")); err != nil {
				t.Fatal(err)
			}
			if _, err := db.LPush(b("l"), b("x")); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}

			segs := segmentsOf(t, dir)
			newest, err := os.ReadFile(segs[len(segs)-1].Path)
			if err != nil {
				t.Fatal(err)
			}
			if h, err := wal.DecodeHeader(newest); err != nil || h.Version < wal.Version || h.FirstSeq != uint64(tc.sets+1) {
				t.Fatalf("the segment the collection ops went to: %+v, %v; want this build's format from seq %d", h, err, tc.sets+1)
			}
			if tc.sets > 0 {
				// The older segment ends at its last record, unchanged: a
				// build of its format still reads all of it.
				got, err := os.ReadFile(oldPath)
				if err != nil || !bytes.Equal(got, old[:len(old)-tc.zeroTail]) || len(segs) != 2 {
					t.Fatalf("older segment: %d bytes, %v, %d segments; want its %d bytes of records unchanged beside one new segment",
						len(got), err, len(segs), len(old)-tc.zeroTail)
				}
			}

			db = openT(t, dir, Options{})
			defer db.Close()
			wantPrefix(t, db, tc.sets, tc.sets)
			if v, err := db.HGet(b("h"), b("f")); err != nil || string(v) != "v" {
				t.Fatalf("HGet after reopening: %q, %v", v, err)
			}
			if l, err := db.LRange(b("l"), 0, -1); err != nil || len(l) != 1 || string(l[0]) != "x" {
				t.Fatalf("LRange after reopening: %q, %v", l, err)
			}
		})
	}
}

func TestFormat_ANewerFormatSegmentIsRefusedByOpenAndRepairAndLeftAsItWas(t *testing.T) {
	dir := t.TempDir()
	writeKeys(t, dir, Options{}, 0, 3)
	// A newer build's segment after ours: the fixed header with format 5,
	// then its format record and a record of a kind this build lacks.
	seg := olderFormatSegment(5, 4, 0, 0)
	seg = wal.AppendRecord(seg, wal.Record{Type: wal.TypeDelete, Seq: 4, Key: b("devkit log format 5, written by kvstore v9.0.0")})
	seg = append(seg, 0xEE, 1, 2, 3)
	path := filepath.Join(dir, wal.SegmentName(4))
	if err := os.WriteFile(path, seg, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, Options{Logger: quietLogger()})
	if !errors.Is(err, ErrNewerFormat) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open = %v; want ErrNewerFormat, not corruption", err)
	}
	for _, want := range []string{wal.SegmentName(4), "kvstore v9.0.0", "run the devkit that wrote it"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open's error %q does not say %q", err, want)
		}
	}
	if _, err := Repair(dir, RepairOptions{Engine: Options{Logger: quietLogger()}}); !errors.Is(err, ErrNewerFormat) {
		t.Fatalf("Repair = %v; want ErrNewerFormat", err)
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, seg) {
		t.Fatalf("the newer segment was changed: %v", err)
	}
}

func TestFormat_ANewerFormatSnapshotIsRefusedNotPassedOverForAnOlderOne(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir, Options{})
	for round := range 2 {
		mustSet(t, db, fmt.Sprintf("k%03d", round), "v")
		if _, err := db.Snapshot(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	snaps, _ := filepath.Glob(filepath.Join(dir, "snap-*.snap"))
	if len(snaps) != 2 {
		t.Fatalf("want two snapshots, found %v", snaps)
	}
	newest, err := os.ReadFile(snaps[1])
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(newest[8:], 4)
	binary.LittleEndian.PutUint32(newest[len(newest)-4:], crc32.Checksum(newest[:len(newest)-4], crc32.MakeTable(crc32.Castagnoli)))
	if err := os.WriteFile(snaps[1], newest, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{Logger: quietLogger()}); !errors.Is(err, ErrNewerFormat) || !strings.Contains(err.Error(), filepath.Base(snaps[1])) {
		t.Fatalf("Open = %v; want ErrNewerFormat naming %s", err, filepath.Base(snaps[1]))
	}
	if _, err := Repair(dir, RepairOptions{Engine: Options{Logger: quietLogger()}}); !errors.Is(err, ErrNewerFormat) {
		t.Fatalf("Repair = %v; want ErrNewerFormat", err)
	}
	if _, err := os.Stat(snaps[1]); err != nil {
		t.Fatalf("the newer snapshot was moved: %v", err)
	}
}
