package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/devkit-go/devkit/supervisor/internal/proc"
)

func newLayout(t *testing.T) Layout {
	t.Helper()
	l := Layout{Root: t.TempDir()}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	return l
}

func TestProcessRecord_RoundTripsEveryField(t *testing.T) {
	l := newLayout(t)
	mon := proc.Identity{PID: 7, StartTime: "70", BootID: "boot-a"}
	want := ProcessRecord{
		Name:        "web.1",
		Process:     proc.Identity{PID: 42, StartTime: "4242", BootID: "boot-a"},
		Monitor:     &mon,
		StartedAt:   time.Date(2026, 12, 2, 4, 0, 0, 123456789, time.UTC),
		Digest:      "sha256:abc",
		LogFile:     "/var/log/web.log",
		StopSignal:  "SIGINT",
		StopTimeout: 1500 * time.Millisecond,
		Restarts:    3,
		Token:       "tok",
		Project:     "stack-1",
		Cgroup:      "/sys/fs/cgroup/x/devkit-sup-web.1-7",
		Spec:        json.RawMessage(`{"command":"sleep","args":["60"]}`),
	}
	w := want
	if err := l.WriteRecord(&w); err != nil {
		t.Fatal(err)
	}
	got, err := l.ReadRecord("web.1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != RecordVersion {
		t.Errorf("version %d, want %d", got.Version, RecordVersion)
	}
	want.Version = RecordVersion
	if got.Monitor == nil || *got.Monitor != mon {
		t.Fatalf("monitor = %v, want %+v", got.Monitor, mon)
	}
	got.Monitor, want.Monitor = nil, nil
	if !got.StartedAt.Equal(want.StartedAt) {
		t.Errorf("started_at %v, want %v", got.StartedAt, want.StartedAt)
	}
	got.StartedAt, want.StartedAt = time.Time{}, time.Time{}
	var spec bytes.Buffer // the record is written indented
	if err := json.Compact(&spec, got.Spec); err != nil {
		t.Fatalf("spec: %v", err)
	}
	got.Spec = spec.Bytes()
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("record read back\n got %+v\nwant %+v", *got, want)
	}
}

func TestReadRecord_MissingIsNilAndCorruptIsAnError(t *testing.T) {
	l := newLayout(t)
	if r, err := l.ReadRecord("none"); r != nil || err != nil {
		t.Fatalf("ReadRecord of no record = %v, %v; want nil, nil", r, err)
	}
	if err := os.WriteFile(l.RecordPath("torn"), []byte(`{"name": "torn", "process": {"pid": 4`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ReadRecord("torn"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a torn record: %v, want ErrCorrupt", err)
	}
	// A record copied under another name would let stop signal the wrong process.
	if err := os.WriteFile(l.RecordPath("db"), []byte(`{"name": "web", "process": {"pid": 1, "start_time": "1"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if r, err := l.ReadRecord("db"); !errors.Is(err, ErrCorrupt) || r != nil {
		t.Errorf("a record naming another process: %v, %v; want ErrCorrupt", r, err)
	}
}

func TestRecord_FromAnotherBootNamesNoLiveProcess(t *testing.T) {
	self, err := proc.Lookup(os.Getpid())
	if err != nil || self.BootID == "" {
		t.Skip("this platform counts start times without a boot id")
	}
	l := newLayout(t)
	stale := self.Identity
	stale.BootID = "ffffffff-0000-0000-0000-000000000000"
	if err := l.WriteRecord(&ProcessRecord{Name: "old", Process: stale}); err != nil {
		t.Fatal(err)
	}
	r, err := l.ReadRecord("old")
	if err != nil {
		t.Fatal(err)
	}
	if r.Process.BootID != stale.BootID {
		t.Fatalf("boot id %q read back, want %q", r.Process.BootID, stale.BootID)
	}
	// Same PID, same start time, another boot: after a reboot a PID and its tick count can recur.
	if _, err := proc.Verify(r.Process); !errors.Is(err, proc.ErrIdentityMismatch) {
		t.Fatalf("Verify of a record from another boot = %v, want ErrIdentityMismatch", err)
	}
}

func TestValidName_RefusesEveryPathTrick(t *testing.T) {
	for _, bad := range []string{"", ".", "..", ".hidden", "-rf", "a/b", `a\b`, "../etc", "a b", "é", "a:b", "a\x00b"} {
		if err := ValidName(bad); !errors.Is(err, ErrInvalidName) {
			t.Errorf("ValidName(%q) = %v, want ErrInvalidName", bad, err)
		}
	}
	for _, good := range []string{"web", "web.1", "a-b_c", "A9"} {
		if err := ValidName(good); err != nil {
			t.Errorf("ValidName(%q) = %v", good, err)
		}
	}
	l := newLayout(t)
	if err := l.WriteRecord(&ProcessRecord{Name: "../escape"}); !errors.Is(err, ErrInvalidName) {
		t.Errorf("WriteRecord of ../escape = %v, want ErrInvalidName", err)
	}
	if _, err := os.Stat(filepath.Join(l.Root, "escape.json")); err == nil {
		t.Error("a record was written outside pids/")
	}
}

func TestRecordNames_ListsValidNamesAndReportsStrays(t *testing.T) {
	l := newLayout(t)
	for _, n := range []string{"web", "db"} {
		if err := l.WriteRecord(&ProcessRecord{Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{".db.json.tmp123", "bad name.json", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(l.Root, "pids", f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	names, bad, err := l.RecordNames()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"db", "web"}) || !slices.Equal(bad, []string{"bad name.json"}) {
		t.Fatalf("names %v bad %v; want [db web] and [bad name.json]", names, bad)
	}
}

func TestExitAndApplied_RoundTripAndRemove(t *testing.T) {
	l := newLayout(t)
	at := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	want := ExitRecord{Name: "web", PID: 42, Code: -1, Signal: "SIGKILL", At: at, Stopped: true, Restarts: 2, GaveUp: true}
	if err := l.WriteExit(&want); err != nil {
		t.Fatal(err)
	}
	got, err := l.ReadExit("web")
	if err != nil || got == nil || !got.At.Equal(at) {
		t.Fatalf("ReadExit = %+v, %v", got, err)
	}
	got.At = at
	if *got != want {
		t.Errorf("exit read back %+v, want %+v", *got, want)
	}
	if err := l.RemoveExit("web"); err != nil {
		t.Fatal(err)
	}
	if got, err := l.ReadExit("web"); got != nil || err != nil {
		t.Errorf("after RemoveExit: %+v, %v", got, err)
	}
	if err := l.WriteApplied("web", "sha256:1"); err != nil {
		t.Fatal(err)
	}
	if d, err := l.ReadApplied("web"); d != "sha256:1" || err != nil {
		t.Errorf("ReadApplied = %q, %v", d, err)
	}
	if err := l.RemoveApplied("web"); err != nil {
		t.Fatal(err)
	}
	if d, err := l.ReadApplied("web"); d != "" || err != nil {
		t.Errorf("after RemoveApplied: %q, %v", d, err)
	}
}
