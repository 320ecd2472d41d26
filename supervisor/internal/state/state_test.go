package state

import (
	"testing"

	"github.com/devkit-go/devkit/supervisor/internal/proc"
)

func TestRemoveRecordIf_KeepsANewerRecord(t *testing.T) {
	l := Layout{Root: t.TempDir()}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	old := proc.Identity{PID: 10, StartTime: "1"}
	newer := proc.Identity{PID: 11, StartTime: "2"}
	l.WriteRecord(&ProcessRecord{Name: "a", Process: newer})
	if err := l.RemoveRecordIf("a", old); err != nil {
		t.Fatal(err)
	}
	if r, _ := l.ReadRecord("a"); r == nil || r.Process != newer || r.Version != RecordVersion {
		t.Fatalf("record = %+v, want the newer one kept", r)
	}
	l.RemoveRecordIf("a", newer)
	if r, _ := l.ReadRecord("a"); r != nil {
		t.Fatal("matching record not removed")
	}
	if names, _, _ := l.RecordNames(); len(names) != 0 {
		t.Fatalf("names = %v", names)
	}
}

func TestStopMarker_NamesOneProcess(t *testing.T) {
	l := Layout{Root: t.TempDir()}
	l.Init()
	l.WriteStopMarker("a", 42)
	if !l.StopRequested("a", 42) || l.StopRequested("a", 43) || l.StopRequested("b", 42) {
		t.Fatal("stop marker matched the wrong process")
	}
	l.RemoveStopMarker("a")
	if l.StopRequested("a", 42) {
		t.Fatal("stop marker survived its removal")
	}
}
