package ratelimit_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/devkit-go/devkit/internal/jsonschema"
	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/internal/storetest"
	"github.com/devkit-go/devkit/ratelimit/memory"
)

// mustKeepSchema fails t when the JSON of v breaks the house rule (snake_case,
// durations as seconds in _seconds fields) and returns the JSON.
func mustKeepSchema(t *testing.T, what string, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	problems, err := jsonschema.Check(b)
	if err != nil || len(problems) > 0 {
		t.Errorf("%s: JSON %s breaks the schema rule: %q %v", what, b, problems, err)
	}
	return b
}

// TestJSON_EveryReportGivesDurationsInSeconds: every type the admin API and
// the CLI encode gives its durations as float seconds in _seconds fields, -1
// for never, and decodes back to the same durations.
func TestJSON_EveryReportGivesDurationsInSeconds(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock()
	store := memory.New(memory.Options{Now: clock.Now})
	l := ratelimit.New(store, ratelimit.Options{Now: clock.Now})
	login := ratelimit.Limit{Name: "login", Rate: 1, Period: time.Minute, Block: 90 * time.Second}
	if _, err := l.Allow(ctx, "k", login); err != nil {
		t.Fatal(err)
	}
	denied, _ := l.Check(ctx, ratelimit.Request{Key: "k", Limits: []ratelimit.Limit{login}, Rule: "login"})
	if denied.Allowed || denied.RetryAfter != 90*time.Second {
		t.Fatalf("the second login was not blocked for 90s: %+v", denied)
	}
	never, _ := l.AllowN(ctx, "big", 5, login)
	if never.RetryAfter >= 0 {
		t.Fatalf("a cost above the capacity: retry after %v, want never", never.RetryAfter)
	}
	info, _ := store.Info(ctx, "k")
	top, _ := store.Top(ctx, 10)

	var gotDenied ratelimit.Result
	if err := json.Unmarshal(mustKeepSchema(t, "Result", denied), &gotDenied); err != nil {
		t.Fatal(err)
	}
	if gotDenied.RetryAfter != 90*time.Second || gotDenied.ResetAfter != denied.ResetAfter || gotDenied.Source != ratelimit.FromStore ||
		len(gotDenied.Limits) != 1 || gotDenied.Limits[0].RetryAfter != 90*time.Second || !gotDenied.Limits[0].Blocked {
		t.Fatalf("Result round trip: %+v, want %+v", gotDenied, denied)
	}
	var raw map[string]any
	_ = json.Unmarshal(mustKeepSchema(t, "Result", never), &raw)
	if raw["retry_after_seconds"] != -1.0 {
		t.Fatalf("never is %v in JSON, want -1", raw["retry_after_seconds"])
	}
	_ = json.Unmarshal(mustKeepSchema(t, "LimitResult", denied.Limits[0]), &raw)
	if raw["name"] != "login" || raw["limit"] != 1.0 || raw["retry_after_seconds"] != 90.0 {
		t.Fatalf("LimitResult JSON %v: want name login, limit 1, retry_after_seconds 90", raw)
	}

	var gotInfo ratelimit.KeyInfo
	if err := json.Unmarshal(mustKeepSchema(t, "KeyInfo", info), &gotInfo); err != nil || gotInfo != info || info.BlockedFor != 90*time.Second {
		t.Fatalf("KeyInfo round trip: %+v, want %+v (%v)", gotInfo, info, err)
	}
	var gotTop []ratelimit.Consumer
	if err := json.Unmarshal(mustKeepSchema(t, "[]Consumer", top), &gotTop); err != nil || len(gotTop) != 2 || gotTop[0] != top[0] {
		t.Fatalf("Top round trip: %+v, want %+v (%v)", gotTop, top, err)
	}
	snap := l.Stats().Snapshot()
	var gotSnap []ratelimit.RuleCounters
	if err := json.Unmarshal(mustKeepSchema(t, "[]RuleCounters", snap), &gotSnap); err != nil || len(gotSnap) != 2 ||
		gotSnap[1].LatencySum != snap[1].LatencySum || len(gotSnap[1].LatencyBounds) != len(snap[1].LatencyBounds) || gotSnap[1].LatencyBounds[0] != snap[1].LatencyBounds[0] {
		t.Fatalf("Snapshot round trip: %+v, want %+v (%v)", gotSnap, snap, err)
	}
}
