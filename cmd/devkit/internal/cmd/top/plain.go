package top

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/devkit-go/devkit/cmd/devkit/internal/live"
	"github.com/devkit-go/devkit/cmd/devkit/internal/units"
)

// renderPlain renders a snapshot as text without colour or cursor
// movement: `devkit top --once` for a person, or a log.
func renderPlain(s live.Snapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "project %s  %s\n", s.Project, s.Time.Local().Format(time.TimeOnly))
	if s.StatusError != "" {
		fmt.Fprintf(&b, "status: %s\n", s.StatusError)
	}
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tPID\tCPU%\tRSS\tRESTARTS\tUPTIME")
	for _, p := range s.Processes {
		r := processRow(p)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r[0], r[1], r[2], r[3], r[4], r[5], r[6])
	}
	_ = tw.Flush() // a strings.Builder does not fail
	b.WriteString(strings.Join(kvLines(s.KV), "\n"))
	b.WriteString("\n")
	b.WriteString(strings.Join(gatewayLines(s.Gateway), "\n"))
	b.WriteString("\n")
	return b.String()
}

// processRow is a process's cells: name, state, pid, CPU %, RSS,
// restarts, uptime.
func processRow(p live.Process) [7]string {
	pid, cpu, up := "-", "-", "-"
	if p.PID != 0 {
		pid = fmt.Sprint(p.PID)
	}
	if p.CPUPercent != nil {
		cpu = fmt.Sprintf("%.1f", *p.CPUPercent)
	}
	if p.UptimeSeconds > 0 {
		up = units.Duration(time.Duration(p.UptimeSeconds * float64(time.Second)))
	}
	return [7]string{p.Name, string(p.State), pid, cpu, units.Bytes(p.RSSBytes), fmt.Sprint(p.Restarts), up}
}

// kvLines is the KV panel's text.
func kvLines(kv *live.KV) []string {
	switch {
	case kv == nil:
		return []string{"kv: not configured (--kv URL)"}
	case !kv.Up:
		return []string{"kv " + kv.URL + ": down: " + kv.Error}
	}
	p99 := "-"
	if kv.P99Seconds != nil {
		p99 = fmt.Sprintf("%.2fms", *kv.P99Seconds*1000)
	}
	lines := []string{
		fmt.Sprintf("kv %s  ops/s %s  p99 %s  keys %d  data %s  rss %s",
			kv.URL, units.Rate(kv.TotalOpsPerSecond), p99, kv.Keys, units.Bytes(kv.DataBytes), units.Bytes(kv.RSSBytes)),
		fmt.Sprintf("   wal %s in %d segments  fsync/s %s  connections %d", units.Bytes(kv.WALBytes), kv.WALSegments, units.Rate(kv.FsyncsPerSecond), kv.Connections),
	}
	if kv.ReadOnly {
		lines = append(lines, "   READ-ONLY: the engine refuses writes after a failed write or fsync")
	}
	return lines
}

// gatewayLines is the rate-limiter panel's text.
func gatewayLines(g *live.Gateway) []string {
	switch {
	case g == nil:
		return []string{"ratelimit: not configured (--gateway URL)"}
	case !g.Up:
		return []string{"ratelimit " + g.URL + ": down: " + g.Error}
	}
	store := fmt.Sprintf("store ok %.2fms", g.StoreLatencySeconds*1000)
	if !g.StoreOK {
		store = "store DOWN: " + g.StoreError
	}
	for _, br := range g.Breakers {
		if br.State != "closed" {
			store += fmt.Sprintf("  breaker %s %s", br.Node, br.State)
		}
	}
	lines := []string{fmt.Sprintf("ratelimit %s  decisions/s %s  denied/s %s  %s", g.URL, units.Rate(g.DecisionsPerSecond), units.Rate(g.DeniedPerSecond), store)}
	for _, r := range g.Rules {
		lines = append(lines, fmt.Sprintf("   %-24s %8s/s  denied %8s/s  (%d allowed, %d denied)", r.Name, units.Rate(r.DecisionsPerSecond), units.Rate(r.DeniedPerSecond), r.Allowed, r.Denied))
	}
	if len(g.Top) > 0 {
		var top []string
		for _, c := range g.Top {
			top = append(top, fmt.Sprintf("%s %d", c.Key, c.Hits))
		}
		lines = append(lines, "   top hits: "+strings.Join(top, ", "))
	}
	if len(g.TopDenied) > 0 {
		var top []string
		for _, c := range g.TopDenied {
			top = append(top, fmt.Sprintf("%s %d", c.Key, c.Denied))
		}
		lines = append(lines, "   top denied: "+strings.Join(top, ", "))
	}
	return lines
}
