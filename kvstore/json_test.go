package kvstore

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/devkit-go/devkit/internal/jsonschema"
)

// TestJSON_ReportsGiveDurationsInSeconds: the engine's reports, which the
// servers and the CLI encode as they are, give durations as float seconds
// in _seconds fields (replay_duration_ns and duration_ns were nanoseconds)
// and decode back to the same durations.
func TestJSON_ReportsGiveDurationsInSeconds(t *testing.T) {
	check := func(what string, v, back any) {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if problems, err := jsonschema.Check(b); err != nil || len(problems) > 0 {
			t.Errorf("%s: %s breaks the schema rule: %q %v", what, b, problems, err)
		}
		if err := json.Unmarshal(b, back); err != nil {
			t.Fatalf("%s: decode %s: %v", what, b, err)
		}
	}
	st := Stats{Keys: 3, ReplayedRecords: 9, ReplayDuration: 1500 * time.Millisecond, LastSnapshot: time.Unix(1700000000, 0).UTC()}
	var st2 Stats
	check("Stats", st, &st2)
	if st2 != st {
		t.Errorf("Stats round trip: %+v, want %+v", st2, st)
	}
	rep := RecoveryReport{Dir: "d", Records: 4, Duration: 2 * time.Millisecond, DamagedSnapshots: []DamagedFile{{Path: "p", Err: "bad"}}}
	var rep2 RecoveryReport
	check("RecoveryReport", rep, &rep2)
	if rep2.Duration != rep.Duration || rep2.Records != 4 || len(rep2.DamagedSnapshots) != 1 {
		t.Errorf("RecoveryReport round trip: %+v, want %+v", rep2, rep)
	}
	var repair RepairReport
	check("RepairReport", RepairReport{Dir: "d", Recovery: rep}, &repair)
	if repair.Recovery.Duration != rep.Duration {
		t.Errorf("RepairReport.Recovery round trip: %+v", repair.Recovery)
	}
	snap := SnapshotInfo{Path: "s", Seq: 7, Duration: 250 * time.Millisecond, At: time.Unix(1700000000, 0).UTC()}
	var snap2 SnapshotInfo
	check("SnapshotInfo", snap, &snap2)
	if snap2 != snap {
		t.Errorf("SnapshotInfo round trip: %+v, want %+v", snap2, snap)
	}
	var raw map[string]any
	b, _ := json.Marshal(st)
	_ = json.Unmarshal(b, &raw)
	if raw["replay_duration_seconds"] != 1.5 {
		t.Errorf("replay_duration_seconds = %v, want 1.5", raw["replay_duration_seconds"])
	}
}
