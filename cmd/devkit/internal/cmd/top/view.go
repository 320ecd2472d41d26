package top

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/devkit-go/devkit/cmd/devkit/internal/live"
	"github.com/devkit-go/devkit/cmd/devkit/internal/units"
	"github.com/devkit-go/devkit/supervisor"
)

// styles are the view's colours, from a renderer of its own: NO_COLOR
// turns them off for this view only, without touching process-wide state.
type styles struct {
	title, dim, header, selected, warn, bad, good, box lipgloss.Style
}

func newStyles(noColor bool) styles {
	r := lipgloss.NewRenderer(os.Stdout)
	if noColor {
		r.SetColorProfile(termenv.Ascii)
	}
	return styles{
		title:    r.NewStyle().Bold(true),
		dim:      r.NewStyle().Faint(true),
		header:   r.NewStyle().Bold(true).Underline(true),
		selected: r.NewStyle().Reverse(true),
		warn:     r.NewStyle().Foreground(lipgloss.Color("3")),
		bad:      r.NewStyle().Foreground(lipgloss.Color("1")).Bold(true),
		good:     r.NewStyle().Foreground(lipgloss.Color("2")),
		box:      r.NewStyle(),
	}
}

// stateStyle colours a state: green running, yellow in between, red failed.
func (s styles) stateStyle(st supervisor.State) lipgloss.Style {
	switch st {
	case supervisor.StateRunning, supervisor.StateCompleted:
		return s.good
	case supervisor.StateRestarting, supervisor.StateStopped, supervisor.StateUnsupervised:
		return s.warn
	}
	return s.bad
}

// View renders the whole screen, never wider or taller than the terminal.
func (m *model) View() string {
	w, h := max(m.width, 20), max(m.height, 5)
	var lines []string
	switch {
	case m.showHelp:
		lines = append(lines, m.styles.title.Render("devkit top — keys"), "")
		lines = append(lines, strings.Split(m.help.FullHelpView(m.keys.FullHelp()), "\n")...)
		lines = append(lines, "", "Actions ask for a confirmation (y); --read-only turns them off.", "esc or ? closes this help.")
	case m.fullLog:
		lines = append(lines, m.headerLine(w))
		lines = append(lines, m.logPane(w, h-2)...)
	default:
		lines = m.mainLines(w, h)
	}
	lines = fit(lines, h-1)
	if m.confirm != nil && len(m.confirm.prompt) > 1 {
		// A reload plan is shown above the footer, in place of the last lines.
		plan := m.confirm.prompt[:len(m.confirm.prompt)-1]
		plan = plan[max(0, len(plan)-(h-2)):]
		copy(lines[len(lines)-len(plan):], plan)
	}
	lines = append(lines, m.footer(w))
	for i, l := range lines {
		lines[i] = truncate(l, w)
	}
	return strings.Join(lines, "\n")
}

// mainLines is the default screen: processes, log, limiter and store.
func (m *model) mainLines(w, h int) []string {
	lines := []string{m.headerLine(w)}
	procs := m.processLines(w)
	panels := m.panelLines(w)
	// The log gets what is left, at least 3 lines; the process list gives
	// way first when the terminal is short.
	room := h - 2 - len(panels)
	if len(procs) > room-4 {
		procs = procs[:max(2, room-4)]
	}
	lines = append(lines, procs...)
	lines = append(lines, m.logPane(w, max(3, room-len(procs)))...)
	return append(lines, panels...)
}

func (m *model) headerLine(w int) string {
	s := m.snap
	mode := ""
	if m.readOnly {
		mode = "  [read-only]"
	}
	t := "-"
	if !s.Time.IsZero() {
		t = s.Time.Local().Format(time.TimeOnly)
	}
	line := m.styles.title.Render("devkit top") + fmt.Sprintf("  project %s  %s%s", s.Project, t, mode)
	if s.StatusError != "" {
		line += "  " + m.styles.bad.Render("status: "+s.StatusError)
	}
	return line
}

// processLines is the process table: a header and a row per process.
func (m *model) processLines(w int) []string {
	head := fmt.Sprintf(" %-12s %-12s %7s %6s %-8s %7s %3s %-7s %7s", "NAME", "STATE", "PID", "CPU%", "", "RSS", "RST", "HEALTH", "UPTIME")
	if m.procQuery != "" {
		head += "  /" + m.procQuery
	}
	lines := []string{m.styles.header.Render(padRight(head, w))}
	for i, p := range m.visibleProcesses() {
		r := processRow(p)
		state := padRight(truncate(r[1], 12), 12)
		row := fmt.Sprintf(" %-12s %s %7s %6s %-8s %7s %3s %-7s %7s",
			truncate(r[0], 12), m.styles.stateStyle(p.State).Render(state), r[2], r[3], sparkline(m.history[p.Name]), r[4], r[5], health(p), r[6])
		if i == m.cursor && !m.fullLog {
			marker := ">"
			if m.focus == paneProcesses {
				row = m.styles.selected.Render(">" + row[1:])
			} else {
				row = marker + row[1:]
			}
		}
		lines = append(lines, row)
	}
	if len(m.snap.Processes) == 0 {
		lines = append(lines, m.styles.dim.Render(" no processes configured or recorded"))
	}
	return lines
}

// health is what the health check says: ok while running, failing when
// the process is unhealthy, "-" otherwise.
func health(p live.Process) string {
	switch p.State {
	case supervisor.StateUnhealthy:
		return "failing"
	case supervisor.StateRunning:
		return "ok"
	}
	return "-"
}

// sparkline draws values (CPU %) as block characters, scaled to the
// largest value shown (at least 1 %, so an idle process stays flat).
func sparkline(values []float64) string {
	const blocks = "▁▂▃▄▅▆▇█"
	bars := []rune(blocks)
	top := 1.0
	for _, v := range values {
		top = max(top, v)
	}
	var b strings.Builder
	for range historyLen - len(values) {
		b.WriteRune(' ')
	}
	for _, v := range values {
		i := int(v / top * float64(len(bars)-1))
		b.WriteRune(bars[max(0, min(i, len(bars)-1))])
	}
	return b.String()
}

// logPane is the selected process's log: a title and its newest lines
// that fit in height (scrolled up by logScroll).
func (m *model) logPane(w, height int) []string {
	name := m.selectedName()
	title := "log"
	if name != "" {
		title = "log " + name
	}
	if m.logQuery != "" {
		title += "  /" + m.logQuery
	}
	if m.logScroll > 0 {
		title += fmt.Sprintf("  (%d lines up)", m.logScroll)
	}
	if m.tail != nil {
		if err := m.tail.Err(); err != nil {
			title += "  " + m.styles.warn.Render(err.Error())
		}
	}
	style := m.styles.dim
	if m.focus == paneLog {
		style = m.styles.header
	}
	lines := []string{style.Render(padRight("── "+title+" ", w))}
	body := m.visibleLog()
	end := max(0, len(body)-m.logScroll)
	start := max(0, end-(height-1))
	lines = append(lines, body[start:end]...)
	for len(lines) < height {
		lines = append(lines, "")
	}
	return lines
}

// panelLines is the rate-limiter and KV panels, side by side when the
// terminal is wide enough, else one under the other.
func (m *model) panelLines(w int) []string {
	rl := m.limiterPanel()
	kv := m.kvPanel()
	if w < 100 {
		return append(rl, kv...)
	}
	half := w / 2
	n := max(len(rl), len(kv))
	out := make([]string, n)
	for i := range n {
		left, right := "", ""
		if i < len(rl) {
			left = rl[i]
		}
		if i < len(kv) {
			right = kv[i]
		}
		out[i] = padRight(truncate(left, half-1), half) + right
	}
	return out
}

func (m *model) limiterPanel() []string {
	g := m.snap.Gateway
	title := m.styles.header.Render("ratelimit")
	switch {
	case g == nil:
		return []string{title + m.styles.dim.Render(" not configured (--gateway URL)")}
	case !g.Up:
		return []string{title + " " + m.styles.bad.Render("down: "+g.Error)}
	}
	store := m.styles.good.Render(fmt.Sprintf("store %.1fms", g.StoreLatencySeconds*1000))
	if !g.StoreOK {
		store = m.styles.bad.Render("store down")
	}
	for _, br := range g.Breakers {
		if br.State != "closed" {
			store += " " + m.styles.bad.Render("breaker "+br.State)
		}
	}
	lines := []string{fmt.Sprintf("%s decisions/s %s  denied/s %s  %s", title, units.Rate(g.DecisionsPerSecond), m.deniedStyle(g.DeniedPerSecond).Render(units.Rate(g.DeniedPerSecond)), store)}
	for i, r := range g.Rules {
		if i == 3 {
			lines = append(lines, m.styles.dim.Render(fmt.Sprintf(" … %d more rules", len(g.Rules)-3)))
			break
		}
		lines = append(lines, fmt.Sprintf(" %-16s %7s/s  denied %s/s", truncate(r.Name, 16), units.Rate(r.DecisionsPerSecond), m.deniedStyle(r.DeniedPerSecond).Render(units.Rate(r.DeniedPerSecond))))
	}
	if len(g.TopDenied) > 0 {
		lines = append(lines, fmt.Sprintf(" top denied %s (%d)", g.TopDenied[0].Key, g.TopDenied[0].Denied))
	} else if len(g.Top) > 0 {
		lines = append(lines, fmt.Sprintf(" top %s (%d hits)", g.Top[0].Key, g.Top[0].Hits))
	}
	return lines
}

func (m *model) deniedStyle(v float64) lipgloss.Style {
	if v > 0 {
		return m.styles.warn
	}
	return m.styles.box
}

func (m *model) kvPanel() []string {
	kv := m.snap.KV
	title := m.styles.header.Render("kv")
	switch {
	case kv == nil:
		return []string{title + m.styles.dim.Render(" not configured (--kv URL)")}
	case !kv.Up:
		return []string{title + " " + m.styles.bad.Render("down: "+kv.Error)}
	}
	p99 := "-"
	if kv.P99Seconds != nil {
		p99 = fmt.Sprintf("%.2fms", *kv.P99Seconds*1000)
	}
	lines := []string{
		fmt.Sprintf("%s ops/s %s  p99 %s  keys %d  mem %s", title, units.Rate(kv.TotalOpsPerSecond), p99, kv.Keys, units.Bytes(kv.RSSBytes)),
		fmt.Sprintf(" wal %s/%d seg  fsync/s %s  conns %d  data %s", units.Bytes(kv.WALBytes), kv.WALSegments, units.Rate(kv.FsyncsPerSecond), kv.Connections, units.Bytes(kv.DataBytes)),
	}
	if kv.ReadOnly {
		lines = append(lines, m.styles.bad.Render(" READ-ONLY after a failed write or fsync"))
	}
	return lines
}

// footer is the filter input, a confirmation, the last message or the
// short help.
func (m *model) footer(w int) string {
	switch {
	case m.filtering:
		return m.input.View()
	case m.confirm != nil:
		return m.styles.warn.Render(m.confirm.prompt[len(m.confirm.prompt)-1] + " [y/n]")
	case m.message != "":
		return m.message
	}
	return m.help.ShortHelpView(m.keys.ShortHelp())
}

// fit keeps at most n lines (a reload plan being confirmed is shown above
// the footer, in place of the last lines).
func fit(lines []string, n int) []string {
	if len(lines) > n {
		lines = lines[:n]
	}
	for len(lines) < n {
		lines = append(lines, "")
	}
	return lines
}

// truncate cuts s to w cells, styles included.
func truncate(s string, w int) string {
	if lipgloss.Width(s) <= w {
		return s
	}
	return lipgloss.NewStyle().MaxWidth(w).Render(s)
}

func padRight(s string, w int) string {
	if d := w - lipgloss.Width(s); d > 0 {
		return s + strings.Repeat(" ", d)
	}
	return s
}
