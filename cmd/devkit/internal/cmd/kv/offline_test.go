package kv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil/cmdtest"
	"github.com/devkit-go/devkit/kvstore"
)

// writeStore makes a closed store of n keys in a fresh directory.
func writeStore(t *testing.T, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	db, err := kvstore.Open(dir, kvstore.Options{Sync: kvstore.SyncNone, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := db.Set(fmt.Appendf(nil, "key:%04d", i), []byte(strings.Repeat("v", 50))); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// damageLog flips a byte a third into the largest file (the log segment),
// so that valid records follow the damage: mid-log corruption.
func damageLog(t *testing.T, dir string) string {
	t.Helper()
	var biggest string
	var size int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() && info.Size() > size {
			biggest, size = filepath.Join(dir, e.Name()), info.Size()
		}
	}
	b, err := os.ReadFile(biggest)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/3] ^= 0xff
	if err := os.WriteFile(biggest, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return biggest
}

func TestVerify_CleanStoreExits0(t *testing.T) {
	dir := writeStore(t, 100)
	out, errOut, code := run(t, nil, "", "verify", "--data", dir, "--json")
	var rep VerifyReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("verify: %d %q %q %v", code, out, errOut, err)
	}
	if !rep.Clean || rep.Keys != 100 || rep.Records != 100 {
		t.Fatalf("report %+v", rep)
	}
	if _, err := os.Stat(filepath.Join(dir, lockFile)); err != nil {
		t.Fatalf("verify touched the lock file of the original: %v", err)
	}
}

func TestVerifyRepair_CorruptionIsFoundNamedAndCut(t *testing.T) {
	dir := writeStore(t, 300)
	damaged := damageLog(t, dir)
	before, _ := os.ReadFile(damaged)

	out, errOut, code := run(t, nil, "", "verify", "--data", dir)
	if code != cmdutil.ExitNegative || !strings.Contains(out, "CORRUPT") || !strings.Contains(out, damaged) || !strings.Contains(out, "offset") {
		t.Fatalf("verify of a damaged log: %d\n%s\n%s", code, out, errOut)
	}
	if after, _ := os.ReadFile(damaged); string(after) != string(before) {
		t.Fatal("verify changed the data directory")
	}

	stamp := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ios, outBuf, _ := streams("")
	if err := repairRun(context.Background(), &RepairOptions{IO: ios, DataDir: dir, JSON: true, Now: func() time.Time { return stamp }}); err != nil {
		t.Fatal(err)
	}
	cmdtest.CheckJSONOutput(t, []string{"repair", "--json"}, outBuf.String())
	var rep kvstore.RepairReport
	if err := json.Unmarshal(outBuf.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.Repaired || rep.DroppedBytes == 0 || rep.Keys == 0 || rep.Keys >= 300 || rep.Backup != dir+".bak-20260102T030405Z" {
		t.Fatalf("repair report %+v", rep)
	}
	if len(rep.Cuts) != 1 || rep.Cuts[0].File != damaged || rep.Cuts[0].FromBytes != int64(len(before)) || rep.Cuts[0].ToBytes > int64(len(before)/3) {
		t.Fatalf("cuts %+v; want %s cut at or before the damage at %d", rep.Cuts, damaged, len(before)/3)
	}
	if cut := rep.Cuts[0]; rep.DroppedBytes != cut.FromBytes-cut.ToBytes {
		t.Fatalf("the engine reports %d bytes dropped, the file lost %d", rep.DroppedBytes, cut.FromBytes-cut.ToBytes)
	}
	backup, err := os.ReadFile(filepath.Join(rep.Backup, filepath.Base(damaged)))
	if err != nil || string(backup) != string(before) {
		t.Fatalf("the backup does not hold the damaged log as it was: %v", err)
	}
	if out, errOut, code := run(t, nil, "", "verify", "--data", dir); code != 0 || !strings.Contains(out, fmt.Sprintf("%d keys", rep.Keys)) {
		t.Fatalf("verify after repair: %d\n%s%s", code, out, errOut)
	}
	// A second repair finds nothing to do.
	if out, _, code := run(t, nil, "", "repair", "--data", dir); code != 0 || !strings.Contains(out, "nothing to repair") {
		t.Fatalf("second repair: %d %q", code, out)
	}
}

func TestRepair_RefusesADirectoryAServerHolds(t *testing.T) {
	dir := writeStore(t, 10)
	db, err := kvstore.Open(dir, kvstore.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, errOut, code := run(t, nil, "", "repair", "--data", dir)
	if code != cmdutil.ExitFailure || !strings.Contains(errOut, "stop it first") {
		t.Fatalf("%d %q", code, errOut)
	}
}

func TestVerify_ProgressBarWhenForced(t *testing.T) {
	dir := writeStore(t, 10)
	ios, _, errOut := streams("")
	on := true
	if err := verifyRun(context.Background(), &VerifyOptions{IO: ios, DataDir: dir, Progress: &on}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "reading [") || !strings.Contains(errOut.String(), "100%") {
		t.Fatalf("no progress bar: %q", errOut)
	}
}

func TestVerify_MissingDirectoryExits1(t *testing.T) {
	if _, _, code := run(t, nil, "", "verify", "--data", filepath.Join(t.TempDir(), "nope")); code != cmdutil.ExitFailure {
		t.Fatalf("exit %d, want 1", code)
	}
}

func TestServe_CorruptLogFailsNonZeroNamingTheFile(t *testing.T) {
	dir := writeStore(t, 200)
	damaged := damageLog(t, dir)
	ios, _, _ := streams("")
	err := serveRun(t.Context(), serveDefaults(ios, dir))
	if !errors.Is(err, kvstore.ErrCorrupt) || cmdutil.ExitCode(err) == 0 || !strings.Contains(err.Error(), damaged) {
		t.Fatalf("serve on a corrupt log = %v (exit %d)", err, cmdutil.ExitCode(err))
	}
	if !strings.Contains(err.Error(), "devkit kv repair --data "+dir) || strings.Contains(err.Error(), "RecoverTruncate") {
		t.Fatalf("serve's corruption error should name `devkit kv repair --data %s`, not a Go option: %v", dir, err)
	}
}

// snapshotStore makes a closed store of 120 keys with two snapshots and
// returns it with its snapshot files, oldest first.
func snapshotStore(t *testing.T) (string, []string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	db, err := kvstore.Open(dir, kvstore.Options{SegmentSize: 1 << 10, CompactionThreshold: -1, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 120 {
		if err := db.Set(fmt.Appendf(nil, "key:%04d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
		if i%40 == 39 {
			if _, err := db.Snapshot(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	snaps, _ := filepath.Glob(filepath.Join(dir, "snap-*.snap"))
	return dir, snaps
}

func flipByte(t *testing.T, path string, off int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyRepair_AgreeOnADamagedSnapshot(t *testing.T) {
	dir, snaps := snapshotStore(t)
	newest := snaps[len(snaps)-1]
	flipByte(t, newest, 40)
	out, _, code := run(t, nil, "", "verify", "--data", dir)
	if code != cmdutil.ExitNegative || !strings.Contains(out, newest) || !strings.Contains(out, "devkit kv repair --data "+dir) {
		t.Fatalf("verify of a damaged snapshot: exit %d\n%s", code, out)
	}
	out, errOut, code := run(t, nil, "", "repair", "--data", dir)
	if code != 0 || !strings.Contains(out, "repaired") || !strings.Contains(out, newest+".damaged") {
		t.Fatalf("repair of what verify called damaged: exit %d\n%s%s", code, out, errOut)
	}
	if out, _, code := run(t, nil, "", "verify", "--data", dir); code != 0 || !strings.Contains(out, "120 keys") {
		t.Fatalf("verify after repair: exit %d\n%s", code, out)
	}
}

func TestRepair_UnrepairableStoreExits1SayingWhyAndChangesNothing(t *testing.T) {
	dir, snaps := snapshotStore(t)
	for _, s := range snaps {
		flipByte(t, s, 40)
	}
	out, _, code := run(t, nil, "", "verify", "--data", dir)
	if code != cmdutil.ExitNegative || !strings.Contains(out, "restore") {
		t.Fatalf("verify: exit %d\n%s", code, out)
	}
	before, _ := os.ReadDir(dir)
	_, errOut, code := run(t, nil, "", "repair", "--data", dir)
	if code != cmdutil.ExitFailure || !strings.Contains(errOut, "cannot be repaired") || !strings.Contains(errOut, "restore") {
		t.Fatalf("repair: exit %d %q", code, errOut)
	}
	if after, _ := os.ReadDir(dir); len(after) != len(before) {
		t.Fatal("an impossible repair changed the directory")
	}
}

// TestVerify_DirectoryAsArgument: `devkit kv verify DIR` checks DIR, as
// `--data DIR` does (it used to be refused as an unknown command).
func TestVerify_DirectoryAsArgument(t *testing.T) {
	dir := writeStore(t, 10)
	out, errOut, code := run(t, nil, "", "verify", dir, "--json")
	var rep VerifyReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("verify DIR: %d %q %q %v", code, out, errOut, err)
	}
	if !rep.Clean || rep.Keys != 10 {
		t.Fatalf("verify DIR checked something else: %+v", rep)
	}
	damageLog(t, dir)
	if _, errOut, code := run(t, nil, "", "verify", dir); code != cmdutil.ExitNegative {
		t.Fatalf("verify DIR on a damaged store: exit %d, %q; want 3", code, errOut)
	}
}
