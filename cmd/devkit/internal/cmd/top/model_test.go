package top

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/devkit-go/devkit/cmd/devkit/internal/live"
	"github.com/devkit-go/devkit/supervisor"
)

// recorder is an actor that records what it is asked to do.
type recorder struct {
	mu    sync.Mutex
	calls []string
	plan  []supervisor.ReloadStep
}

func (r *recorder) record(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, s)
}

func (r *recorder) Restart(_ context.Context, names []string, _ supervisor.StopOptions) ([]supervisor.StartResult, error) {
	r.record("restart " + strings.Join(names, ","))
	return nil, nil
}

func (r *recorder) Stop(_ context.Context, names []string, _ supervisor.StopOptions) ([]supervisor.StopResult, error) {
	r.record("stop " + strings.Join(names, ","))
	return nil, nil
}

func (r *recorder) Start(_ context.Context, names []string) ([]supervisor.StartResult, error) {
	r.record("start " + strings.Join(names, ","))
	return nil, errors.New("port taken")
}

func (r *recorder) ReloadPlan(context.Context) ([]supervisor.ReloadStep, error) {
	r.record("plan")
	return r.plan, nil
}

func (r *recorder) Reload(context.Context) ([]supervisor.ReloadStep, error) {
	r.record("reload")
	return r.plan, nil
}

func pct(v float64) *float64 { return &v }

func testSnapshot() live.Snapshot {
	return live.Snapshot{
		Schema: live.Schema, Time: time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC), Project: "stack-1",
		Processes: []live.Process{
			{ProcessStatus: supervisor.ProcessStatus{Name: "kv", State: supervisor.StateRunning, PID: 101, UptimeSeconds: 75, RSSBytes: 20 << 20}, CPUPercent: pct(3.5)},
			{ProcessStatus: supervisor.ProcessStatus{Name: "gateway", State: supervisor.StateRestarting, Restarts: 2}},
			{ProcessStatus: supervisor.ProcessStatus{Name: "worker", State: supervisor.StateRunning, PID: 103}, CPUPercent: pct(0)},
		},
		KV: &live.KV{URL: "http://127.0.0.1:4000", Up: true, TotalOpsPerSecond: 1234, P99Seconds: pct(0.0012), Keys: 42, RSSBytes: 30 << 20, WALBytes: 4096, WALSegments: 1},
		Gateway: &live.Gateway{URL: "http://127.0.0.1:8081", Up: true, StoreOK: true, DecisionsPerSecond: 50, DeniedPerSecond: 7,
			Rules: []live.Rule{{Name: "api", DecisionsPerSecond: 50, DeniedPerSecond: 7}},
			Top:   []live.Consumer{{Key: "tenant=acme", Hits: 99}}},
	}
}

// newTestModel is a model over a fixed snapshot whose logs are tails the
// test writes into.
func newTestModel(t *testing.T, opts Options, act actor) (*model, map[string]*live.LogTail) {
	t.Helper()
	tails := map[string]*live.LogTail{}
	follow := func(_ context.Context, name string) *live.LogTail {
		if tails[name] == nil {
			tails[name] = live.NewLogTail(name, 100)
		}
		return tails[name]
	}
	if opts.Interval == 0 {
		opts.Interval = time.Hour
	}
	opts.NoColor = true
	m := newModel(t.Context(), &opts, func(context.Context) live.Snapshot { return testSnapshot() }, act, follow)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	m.Update(snapMsg(testSnapshot()))
	return m, tails
}

// press sends keys (a string of runes, or a named key such as "enter"),
// running the commands they return that do not wait (actions, plans).
func press(m *model, keys ...string) {
	for _, k := range keys {
		var msg tea.KeyMsg
		switch k {
		case "enter":
			msg = tea.KeyMsg{Type: tea.KeyEnter}
		case "esc":
			msg = tea.KeyMsg{Type: tea.KeyEsc}
		case "down":
			msg = tea.KeyMsg{Type: tea.KeyDown}
		default:
			msg = tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
		}
		_, cmd := m.Update(msg)
		runQuick(m, cmd)
	}
}

// runQuick runs cmd and feeds its answer back when it is an action's or a
// plan's (the only commands that end on their own in these tests).
func runQuick(m *model, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	select {
	case msg := <-done:
		switch msg.(type) {
		case actionMsg, planMsg:
			_, next := m.Update(msg)
			_ = next // the next sample: not run here
		}
	case <-time.After(200 * time.Millisecond):
	}
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;?]*[a-zA-Z]")

func TestView_FitsAn80x24TerminalWithoutColourUnderNoColor(t *testing.T) {
	m, _ := newTestModel(t, Options{}, nil)
	v := m.View()
	lines := strings.Split(v, "\n")
	if len(lines) != 24 {
		t.Fatalf("%d lines at 80x24:\n%s", len(lines), v)
	}
	for i, l := range lines {
		if w := lipgloss.Width(l); w > 80 {
			t.Errorf("line %d is %d cells wide: %q", i, w, l)
		}
	}
	if ansi.MatchString(v) {
		t.Fatalf("colour codes under NO_COLOR:\n%q", v)
	}
	for _, want := range []string{"kv", "running", "gateway", "restarting", "worker", "20.0M", "1m15s", "decisions/s 50.0", "denied/s 7.0", "ops/s 1234", "p99 1.20ms", "keys 42", "tenant=acme"} {
		if !strings.Contains(v, want) {
			t.Errorf("the view lacks %q:\n%s", want, v)
		}
	}
}

func TestKeys_MoveSelectAndFollowTheSelectedLog(t *testing.T) {
	m, tails := newTestModel(t, Options{}, nil)
	if m.selectedName() != "kv" || tails["kv"] == nil {
		t.Fatalf("selected %q, tails %v: want kv followed", m.selectedName(), tails)
	}
	press(m, "j")
	if m.selectedName() != "gateway" || m.tail != tails["gateway"] {
		t.Fatalf("after j: %q", m.selectedName())
	}
	press(m, "down", "down", "down") // stops at the last
	if m.selectedName() != "worker" {
		t.Fatalf("after 3×down: %q", m.selectedName())
	}
	press(m, "k", "k", "k")
	if m.selectedName() != "kv" {
		t.Fatalf("after 3×k: %q", m.selectedName())
	}
	// A new reading keeps the selection on the same process.
	press(m, "j")
	s := testSnapshot()
	s.Processes = append([]live.Process{{ProcessStatus: supervisor.ProcessStatus{Name: "aaa", State: supervisor.StateStopped}}}, s.Processes...)
	m.Update(snapMsg(s))
	if m.selectedName() != "gateway" {
		t.Fatalf("after a reading with a process before it: %q, want gateway still", m.selectedName())
	}
}

func TestKeys_SlashFiltersTheLogAndEscClearsIt(t *testing.T) {
	m, tails := newTestModel(t, Options{}, nil)
	fmt.Fprint(tails["kv"], "GET /keys/a 200\nPUT /keys/b 204\nGET /keys/c 404\n")
	press(m, "l/GE", "T", "enter") // keys read at once arrive as one message
	v := m.View()
	if !strings.Contains(v, "GET /keys/a") || !strings.Contains(v, "GET /keys/c") || strings.Contains(v, "PUT /keys/b") {
		t.Fatalf("log filtered by GET:\n%s", v)
	}
	press(m, "esc")
	if v := m.View(); !strings.Contains(v, "PUT /keys/b") {
		t.Fatalf("esc did not clear the filter:\n%s", v)
	}
	// In the processes pane, / filters the processes.
	press(m, "h", "/", "w", "o", "enter")
	if ps := m.visibleProcesses(); len(ps) != 1 || ps[0].Name != "worker" || m.selectedName() != "worker" {
		t.Fatalf("processes filtered by wo: %v", ps)
	}
}

func TestKeys_EnterIsAFullScreenLogAndEscGoesBack(t *testing.T) {
	m, tails := newTestModel(t, Options{}, nil)
	for i := range 40 {
		fmt.Fprintf(tails["kv"], "line %02d\n", i)
	}
	press(m, "enter")
	v := m.View()
	if !m.fullLog || strings.Contains(v, "gateway") || !strings.Contains(v, "line 39") || !strings.Contains(v, "line 19") {
		t.Fatalf("full-screen log:\n%s", v)
	}
	press(m, "k", "k")
	if v := m.View(); strings.Contains(v, "line 39") || !strings.Contains(v, "line 37") {
		t.Fatalf("scrolled up 2:\n%s", v)
	}
	press(m, "esc")
	if m.fullLog || !strings.Contains(m.View(), "gateway") {
		t.Fatalf("esc did not go back:\n%s", m.View())
	}
}

func TestKeys_ActionsAskFirstAndRunOnlyOnYes(t *testing.T) {
	rec := &recorder{}
	m, _ := newTestModel(t, Options{}, rec)
	press(m, "j", "r")
	if m.confirm == nil || !strings.Contains(m.View(), "restart gateway? [y/n]") || len(rec.calls) != 0 {
		t.Fatalf("r: confirm %+v calls %v\n%s", m.confirm, rec.calls, m.View())
	}
	press(m, "n")
	if m.confirm != nil || len(rec.calls) != 0 {
		t.Fatalf("n ran something: %v", rec.calls)
	}
	press(m, "r", "y", "s", "y", "t", "y")
	want := []string{"restart gateway", "stop gateway", "start gateway"}
	if fmt.Sprint(rec.calls) != fmt.Sprint(want) {
		t.Fatalf("calls %v, want %v", rec.calls, want)
	}
	if !strings.Contains(m.View(), "port taken") {
		t.Fatalf("the failed start is not shown:\n%s", m.View())
	}
}

func TestKeys_ReloadShowsItsPlanBeforeApplying(t *testing.T) {
	rec := &recorder{plan: []supervisor.ReloadStep{{Name: "kv", Action: supervisor.ReloadNone}, {Name: "gateway", Action: supervisor.ReloadRestart, Reason: "spec changed"}}}
	m, _ := newTestModel(t, Options{}, rec)
	press(m, "R")
	if m.confirm == nil || !strings.Contains(strings.Join(m.confirm.prompt, "\n"), "restart  gateway") || fmt.Sprint(rec.calls) != "[plan]" {
		t.Fatalf("R: confirm %+v, calls %v", m.confirm, rec.calls)
	}
	if v := m.View(); !strings.Contains(v, "restart  gateway") {
		t.Fatalf("the plan is not on screen:\n%s", v)
	}
	press(m, "y")
	if fmt.Sprint(rec.calls) != "[plan reload]" {
		t.Fatalf("calls %v", rec.calls)
	}
}

func TestKeys_ReadOnlyRefusesActions(t *testing.T) {
	rec := &recorder{}
	m, _ := newTestModel(t, Options{ReadOnly: true}, rec)
	press(m, "r", "y", "s", "y", "R", "y")
	if len(rec.calls) != 0 || m.confirm != nil || !strings.Contains(m.View(), "read-only") {
		t.Fatalf("read-only ran %v\n%s", rec.calls, m.View())
	}
}

func TestKeys_HelpIsTheKeyMapAndQQuits(t *testing.T) {
	m, _ := newTestModel(t, Options{}, nil)
	press(m, "?")
	v := m.View()
	for _, b := range []string{"k/↑", "enter", "esc", "R", "reload (plan first)", "filter the pane"} {
		if !strings.Contains(v, b) {
			t.Errorf("help lacks %q:\n%s", b, v)
		}
	}
	press(m, "esc")
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")})
	if cmd == nil {
		t.Fatal("q returned no command")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal("q does not quit")
	}
}

func TestNeedTerminal_APipeIsRefusedWithTheWayOut(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	err = needTerminal(r, w)
	if err == nil || !strings.Contains(err.Error(), "--once") {
		t.Fatalf("needTerminal(pipe) = %v, want an error naming --once", err)
	}
}
