package top

// The model only reads until the user confirms an action: a key that acts
// (restart, stop, start, reload) first sets a pending confirmation, and only
// "y" on it runs anything; --read-only refuses before asking.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/devkit-go/devkit/cmd/devkit/internal/live"
	"github.com/devkit-go/devkit/supervisor"
)

// pane is where the keys go.
type pane int

const (
	paneProcesses pane = iota
	paneLog
)

// historyLen is how many readings a sparkline shows.
const historyLen = 8

// logLines is how many lines of the selected log are held.
const logLines = 500

// actor runs the actions; the supervisor in the binary.
type actor interface {
	Restart(ctx context.Context, names []string, opts supervisor.StopOptions) ([]supervisor.StartResult, error)
	Stop(ctx context.Context, names []string, opts supervisor.StopOptions) ([]supervisor.StopResult, error)
	Start(ctx context.Context, names []string) ([]supervisor.StartResult, error)
	ReloadPlan(ctx context.Context) ([]supervisor.ReloadStep, error)
	Reload(ctx context.Context) ([]supervisor.ReloadStep, error)
}

// pending is an action waiting for its confirmation.
type pending struct {
	verb   string // restart, stop, start, reload
	name   string // the process; "" for reload
	prompt []string
}

// model is the state of the view.
type model struct {
	ctx      context.Context
	keys     keyMap
	help     help.Model
	styles   styles
	readOnly bool
	interval time.Duration

	sample func(context.Context) live.Snapshot
	act    actor
	// follow starts following a process's log; nil shows none.
	follow func(ctx context.Context, name string) *live.LogTail

	snap     live.Snapshot
	history  map[string][]float64 // CPU % per process, newest last
	width    int
	height   int
	cursor   int
	focus    pane
	fullLog  bool
	showHelp bool

	filtering bool
	input     textinput.Model
	procQuery string
	logQuery  string
	logScroll int // lines up from the newest

	tail       *live.LogTail
	stopFollow context.CancelFunc

	confirm *pending
	message string
	busy    bool
}

type (
	snapMsg   live.Snapshot
	tickMsg   struct{}
	logMsg    struct{ tail *live.LogTail }
	actionMsg struct {
		text string
		err  error
	}
	planMsg struct {
		steps []supervisor.ReloadStep
		err   error
	}
)

func newModel(ctx context.Context, opts *Options, sample func(context.Context) live.Snapshot, act actor, follow func(context.Context, string) *live.LogTail) *model {
	in := textinput.New()
	in.Prompt = "/"
	in.CharLimit = 200
	return &model{
		ctx: ctx, keys: newKeyMap(), help: help.New(), styles: newStyles(opts.NoColor),
		readOnly: opts.ReadOnly, interval: opts.Interval,
		sample: sample, act: act, follow: follow,
		history: map[string][]float64{}, width: 80, height: 24, input: in,
	}
}

// Init takes the first reading at once.
func (m *model) Init() tea.Cmd { return m.sampleCmd() }

func (m *model) sampleCmd() tea.Cmd {
	return func() tea.Msg { return snapMsg(m.sample(m.ctx)) }
}

func (m *model) tickCmd() tea.Cmd {
	return tea.Tick(m.interval, func(time.Time) tea.Msg { return tickMsg{} })
}

// waitLog waits for the next line of tail.
func (m *model) waitLog(tail *live.LogTail) tea.Cmd {
	if tail == nil {
		return nil
	}
	changed := tail.Changed()
	return func() tea.Msg {
		select {
		case <-changed:
		case <-m.ctx.Done():
		}
		return logMsg{tail}
	}
}

// Update handles one message.
func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.help.Width = msg.Width
		return m, nil
	case snapMsg:
		return m, tea.Batch(m.applySnapshot(live.Snapshot(msg)), m.tickCmd())
	case tickMsg:
		return m, m.sampleCmd()
	case logMsg:
		if msg.tail != m.tail {
			return m, nil // a log no longer shown
		}
		return m, m.waitLog(m.tail)
	case actionMsg:
		m.busy = false
		m.message = msg.text
		if msg.err != nil {
			m.message = msg.err.Error()
		}
		return m, m.sampleCmd()
	case planMsg:
		return m, m.showPlan(msg)
	case tea.KeyMsg:
		return m, m.key(msg)
	}
	return m, nil
}

// applySnapshot takes a new reading, keeps the selection on the same
// process and follows its log.
func (m *model) applySnapshot(s live.Snapshot) tea.Cmd {
	selected := m.selectedName()
	m.snap = s
	for _, p := range s.Processes {
		v := 0.0
		if p.CPUPercent != nil {
			v = *p.CPUPercent
		}
		h := append(m.history[p.Name], v)
		if len(h) > historyLen {
			h = h[len(h)-historyLen:]
		}
		m.history[p.Name] = h
	}
	if selected != "" {
		for i, p := range m.visibleProcesses() {
			if p.Name == selected {
				m.cursor = i
			}
		}
	}
	m.clampCursor()
	return m.followSelected()
}

// followSelected starts following the selected process's log when it is
// not the one followed already.
func (m *model) followSelected() tea.Cmd {
	name := m.selectedName()
	if m.follow == nil || name == "" || (m.tail != nil && m.tail.Name() == name) {
		return nil
	}
	if m.stopFollow != nil {
		m.stopFollow()
	}
	ctx, cancel := context.WithCancel(m.ctx)
	m.stopFollow = cancel
	m.tail = m.follow(ctx, name)
	m.logScroll = 0
	return m.waitLog(m.tail)
}

// visibleProcesses is the processes the filter lets through.
func (m *model) visibleProcesses() []live.Process {
	if m.procQuery == "" {
		return m.snap.Processes
	}
	var out []live.Process
	for _, p := range m.snap.Processes {
		if strings.Contains(p.Name, m.procQuery) {
			out = append(out, p)
		}
	}
	return out
}

func (m *model) selectedName() string {
	ps := m.visibleProcesses()
	if m.cursor < 0 || m.cursor >= len(ps) {
		return ""
	}
	return ps[m.cursor].Name
}

func (m *model) clampCursor() {
	n := len(m.visibleProcesses())
	m.cursor = max(0, min(m.cursor, n-1))
}

// visibleLog is the followed log's lines the filter lets through.
func (m *model) visibleLog() []string {
	if m.tail == nil {
		return nil
	}
	var out []string
	for _, l := range m.tail.Lines() {
		if m.logQuery == "" || strings.Contains(l.Text, m.logQuery) {
			out = append(out, l.Text)
		}
	}
	return out
}

// key handles a key press in the mode the view is in. Keys typed faster
// than the terminal is read arrive as one message of several runes (a
// paste, or "l/" sent at once): outside the filter each is its own key.
func (m *model) key(k tea.KeyMsg) tea.Cmd {
	if k.Type == tea.KeyRunes && len(k.Runes) > 1 && !m.filtering && m.confirm == nil {
		var cmds []tea.Cmd
		for i, r := range k.Runes {
			if m.filtering {
				rest := tea.KeyMsg{Type: tea.KeyRunes, Runes: k.Runes[i:]}
				return tea.Batch(append(cmds, m.key(rest))...)
			}
			cmds = append(cmds, m.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}}))
		}
		return tea.Batch(cmds...)
	}
	switch {
	case m.confirm != nil:
		return m.confirmKey(k)
	case m.filtering:
		return m.filterKey(k)
	case m.showHelp:
		if key.Matches(k, m.keys.Back, m.keys.Help) {
			m.showHelp = false
		} else if key.Matches(k, m.keys.Quit) {
			return m.quit()
		}
		return nil
	}
	switch {
	case key.Matches(k, m.keys.Quit):
		return m.quit()
	case key.Matches(k, m.keys.Help):
		m.showHelp = true
	case key.Matches(k, m.keys.Up):
		m.move(-1)
	case key.Matches(k, m.keys.Down):
		m.move(1)
	case key.Matches(k, m.keys.Left):
		if !m.fullLog {
			m.focus = paneProcesses
		}
	case key.Matches(k, m.keys.Right):
		m.focus = paneLog
	case key.Matches(k, m.keys.Enter):
		if m.selectedName() != "" {
			m.fullLog, m.focus = true, paneLog
		}
	case key.Matches(k, m.keys.Back):
		m.back()
	case key.Matches(k, m.keys.Filter):
		m.filtering = true
		m.input.SetValue(m.query())
		m.input.CursorEnd()
		return m.input.Focus()
	case key.Matches(k, m.keys.Restart):
		return m.ask("restart")
	case key.Matches(k, m.keys.Stop):
		return m.ask("stop")
	case key.Matches(k, m.keys.Start):
		return m.ask("start")
	case key.Matches(k, m.keys.Reload):
		return m.ask("reload")
	}
	return nil
}

func (m *model) quit() tea.Cmd {
	if m.stopFollow != nil {
		m.stopFollow()
	}
	return tea.Quit
}

// move moves the selection, or scrolls the log when it has the keys.
func (m *model) move(d int) {
	if m.focus == paneLog {
		m.logScroll = max(0, min(m.logScroll-d, len(m.visibleLog())-1))
		return
	}
	m.cursor += d
	m.clampCursor()
	m.followSelected()
}

// back leaves the innermost mode: the full-screen log, then a filter.
func (m *model) back() {
	switch {
	case m.fullLog:
		m.fullLog, m.focus = false, paneProcesses
	case m.focus == paneLog && m.logQuery != "":
		m.logQuery = ""
	case m.procQuery != "":
		m.procQuery = ""
	case m.message != "":
		m.message = ""
	}
}

// query is the filter of the pane that has the keys.
func (m *model) query() string {
	if m.focus == paneLog {
		return m.logQuery
	}
	return m.procQuery
}

func (m *model) filterKey(k tea.KeyMsg) tea.Cmd {
	switch k.Type {
	case tea.KeyEnter:
		m.filtering = false
		m.input.Blur()
		return nil
	case tea.KeyEsc:
		m.filtering = false
		m.input.Blur()
		m.input.SetValue("")
		m.setQuery("")
		return nil
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(k)
	m.setQuery(m.input.Value())
	return cmd
}

func (m *model) setQuery(q string) {
	if m.focus == paneLog {
		m.logQuery, m.logScroll = q, 0
		return
	}
	m.procQuery = q
	m.clampCursor()
	m.followSelected()
}

// ask sets up the confirmation of verb on the selected process (or, for
// reload, first fetches the plan a dry run would follow).
func (m *model) ask(verb string) tea.Cmd {
	if m.readOnly || m.act == nil {
		m.message = verb + ": the view is read-only (--read-only)"
		return nil
	}
	if m.busy {
		m.message = "an action is still running"
		return nil
	}
	if verb == "reload" {
		m.message = "reload: computing the plan..."
		return func() tea.Msg {
			steps, err := m.act.ReloadPlan(m.ctx)
			return planMsg{steps, err}
		}
	}
	name := m.selectedName()
	if name == "" {
		m.message = verb + ": no process selected"
		return nil
	}
	m.confirm = &pending{verb: verb, name: name, prompt: []string{fmt.Sprintf("%s %s?", verb, name)}}
	return nil
}

// showPlan asks to confirm a reload, showing its dry-run plan.
func (m *model) showPlan(p planMsg) tea.Cmd {
	if p.err != nil {
		m.message = "reload plan: " + p.err.Error()
		return nil
	}
	prompt := []string{"reload would:"}
	changes := 0
	for _, st := range p.steps {
		if st.Action == supervisor.ReloadNone {
			continue
		}
		changes++
		line := fmt.Sprintf("  %-8s %s", st.Action, st.Name)
		if st.Reason != "" {
			line += "  (" + st.Reason + ")"
		}
		prompt = append(prompt, line)
	}
	if changes == 0 {
		m.message = "reload: nothing to do, the YAML matches what runs"
		return nil
	}
	m.message = ""
	m.confirm = &pending{verb: "reload", prompt: append(prompt, "apply?")}
	return nil
}

func (m *model) confirmKey(k tea.KeyMsg) tea.Cmd {
	switch {
	case key.Matches(k, m.keys.Yes):
		p := *m.confirm
		m.confirm, m.busy = nil, true
		m.message = p.verb + " " + p.name + "..."
		return m.run(p)
	case key.Matches(k, m.keys.No):
		m.confirm = nil
		m.message = "cancelled"
	}
	return nil
}

// run does a confirmed action off the UI loop.
func (m *model) run(p pending) tea.Cmd {
	ctx, names := m.ctx, []string{p.name}
	return func() tea.Msg {
		var err error
		switch p.verb {
		case "restart":
			_, err = m.act.Restart(ctx, names, supervisor.StopOptions{})
		case "stop":
			_, err = m.act.Stop(ctx, names, supervisor.StopOptions{})
		case "start":
			_, err = m.act.Start(ctx, names)
		case "reload":
			_, err = m.act.Reload(ctx)
		}
		if err != nil {
			return actionMsg{err: fmt.Errorf("%s %s: %w", p.verb, p.name, err)}
		}
		return actionMsg{text: strings.TrimSpace(p.verb + " " + p.name + ": done")}
	}
}
