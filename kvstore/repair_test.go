package kvstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devkit-go/devkit/kvstore/internal/wal"
)

// damagedStore builds a closed store with three snapshots' worth of keys
// over small segments and damages it as named.
func damagedStore(t *testing.T, damage string) string {
	t.Helper()
	dir := t.TempDir()
	o := Options{SegmentSize: 1 << 10, CompactionThreshold: -1}
	db := openT(t, dir, o)
	setRange(t, db, 0, 40)
	if _, err := db.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	setRange(t, db, 40, 80)
	if _, err := db.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	setRange(t, db, 80, 200)
	db.Close()
	segs := segmentsOf(t, dir)
	snaps := snapshotsIn(t, dir)
	switch damage {
	case "none":
	case "newest snapshot":
		flipBit(t, snaps[len(snaps)-1], 40)
	case "mid-log record":
		// A segment the snapshot cut short may hold one record only: damage
		// the first of the last three but one that reaches past the offset.
		flipBit(t, midLogSegment(t, segs, 60), 60)
	case "segment header":
		flipBit(t, segs[len(segs)-3].Path, 3)
	case "missing segment":
		if err := os.Remove(segs[len(segs)-3].Path); err != nil {
			t.Fatal(err)
		}
	case "torn tail":
		f, err := os.OpenFile(segs[len(segs)-1].Path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte{1, 2, 3, 4, 5, 6, 7})
		f.Close()
	default:
		t.Fatalf("unknown damage %q", damage)
	}
	return dir
}

// midLogSegment is the path of the first of segs' last three segments, the
// live one left out, that is longer than off bytes.
func midLogSegment(t *testing.T, segs []wal.SegmentInfo, off int) string {
	t.Helper()
	for _, s := range segs[max(0, len(segs)-3) : len(segs)-1] {
		if fi, err := os.Stat(s.Path); err == nil && fi.Size() > int64(off) {
			return s.Path
		}
	}
	t.Fatalf("no segment of the log's tail is longer than %d bytes", off)
	return ""
}

// damaged reports whether Verify calls the directory damaged.
func damaged(rep VerifyReport, err error) bool {
	return errors.Is(err, ErrCorrupt) || len(rep.DamagedSnapshots) > 0
}

func TestRepair_RepairsWhatVerifyCallsDamaged(t *testing.T) {
	for _, tc := range []struct {
		damage      string
		wantDamaged bool
	}{
		{"none", false},
		{"torn tail", false},
		{"newest snapshot", true},
		{"mid-log record", true},
		{"segment header", true},
		{"missing segment", true},
	} {
		t.Run(tc.damage, func(t *testing.T) {
			dir := damagedStore(t, tc.damage)
			vrep, verr := Verify(dir, Options{Logger: quietLogger()})
			if damaged(vrep, verr) != tc.wantDamaged {
				t.Fatalf("Verify: damaged=%v (%v, %d damaged snapshots), want %v", damaged(vrep, verr), verr, len(vrep.DamagedSnapshots), tc.wantDamaged)
			}
			backup := filepath.Join(t.TempDir(), "backup")
			rep, err := Repair(dir, RepairOptions{Engine: Options{Logger: quietLogger()}, BackupDir: backup})
			if err != nil {
				t.Fatalf("Repair: %v", err)
			}
			if rep.Repaired != tc.wantDamaged {
				t.Fatalf("Repair says repaired=%v, Verify said damaged=%v", rep.Repaired, tc.wantDamaged)
			}
			after, err := Verify(dir, Options{Logger: quietLogger()})
			if damaged(after, err) || after.TornTailBytes != 0 {
				t.Fatalf("Verify after Repair: %v, %d damaged snapshots, torn %d", err, len(after.DamagedSnapshots), after.TornTailBytes)
			}
			if after.Keys != rep.Keys {
				t.Fatalf("Verify after Repair counts %d keys, Repair reported %d", after.Keys, rep.Keys)
			}
			db := openT(t, dir, Options{})
			defer db.Close()
			if tc.damage == "none" || tc.damage == "torn tail" || tc.damage == "newest snapshot" {
				wantPrefix(t, db, 200, 200) // nothing acknowledged is lost
			}
			for _, f := range rep.BackedUp {
				if _, err := os.Stat(filepath.Join(backup, filepath.Base(f))); err != nil {
					t.Fatalf("backup lacks %s: %v", f, err)
				}
			}
			if tc.damage == "newest snapshot" && len(rep.MovedAside) != 1 {
				t.Fatalf("moved aside %v, want the damaged snapshot", rep.MovedAside)
			}
		})
	}
}

func TestRepair_SaysWhyNotWhenEverySnapshotIsDamagedAndChangesNothing(t *testing.T) {
	dir := t.TempDir()
	o := Options{SegmentSize: 1 << 10, CompactionThreshold: -1}
	db := openT(t, dir, o)
	for round := 0; round < 3; round++ {
		setRange(t, db, round*20, round*20+20)
		if _, err := db.Snapshot(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	for _, s := range snapshotsIn(t, dir) {
		flipBit(t, s, 40)
	}
	before, _ := os.ReadDir(dir)
	_, err := Repair(dir, RepairOptions{Engine: Options{Logger: quietLogger()}})
	var ue *UnrecoverableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "cannot rebuild") {
		t.Fatalf("Repair = %v, want an UnrecoverableError saying why", err)
	}
	after, _ := os.ReadDir(dir)
	if len(after) != len(before) {
		t.Fatalf("Repair changed the directory: %d entries before, %d after", len(before), len(after))
	}
}

func TestRepair_RefusesADirectoryInUse(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir, Options{})
	defer db.Close()
	if _, err := Repair(dir, RepairOptions{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("Repair of an open store = %v, want ErrLocked", err)
	}
}

func TestCorruptionError_NamesTheRepairCommand(t *testing.T) {
	dir := damagedStore(t, "mid-log record")
	_, err := Open(dir, Options{Logger: quietLogger()})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "devkit kv repair --data "+dir) || strings.Contains(err.Error(), "RecoverTruncate") {
		t.Fatalf("Open error %q should name `devkit kv repair --data %s` and no Go option", err, dir)
	}
}
