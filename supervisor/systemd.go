package supervisor

import (
	"fmt"
	"maps"
	"math"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// SystemdUnits renders one systemd user unit per process, for users who
// want boot persistence: file name (devkit-<name>.service) to contents.
// logDir is where processes without a log_file write their output. Every
// value is quoted or escaped so that systemd reads it back as it was (a
// newline in a value can never start a directive); what systemd cannot
// express is listed in a comment at the top of the unit.
func (c *Config) SystemdUnits(logDir string) map[string]string {
	units := map[string]string{}
	for _, name := range c.Order {
		units[unitName(name)] = systemdUnit(c.Path, c.Processes[name], logDir)
	}
	return units
}

func systemdUnit(configPath string, p *Process, logDir string) string {
	var b strings.Builder
	var notes []string // what the unit does not carry, for the header
	b.WriteString("[Unit]\n")
	fmt.Fprintf(&b, "Description=devkit process %s\n", p.Name)
	if len(p.DependsOn) > 0 {
		deps := make([]string, len(p.DependsOn))
		for i, d := range p.DependsOn {
			deps[i] = unitName(d)
		}
		// A oneshot dependency is Type=oneshot with RemainAfterExit=yes:
		// After= waits until it has completed.
		fmt.Fprintf(&b, "After=%s\nRequires=%s\n", strings.Join(deps, " "), strings.Join(deps, " "))
	}
	restart := p.Restart.Mode
	if p.Oneshot && restart == RestartAlways {
		restart = RestartOnFailure // systemd refuses Restart=always for a oneshot
		notes = append(notes, "restart: always on a oneshot: systemd allows on-failure only")
	}
	if restart != RestartNever && p.Restart.MaxRestarts > 0 {
		// systemd's counterpart of giving up after max_restarts.
		fmt.Fprintf(&b, "StartLimitBurst=%d\nStartLimitIntervalSec=%s\n", p.Restart.MaxRestarts+1, systemdSeconds(p.Restart.MaxBackoff.Seconds()*float64(p.Restart.MaxRestarts+1)))
	}
	b.WriteString("\n[Service]\n")
	if p.Oneshot {
		// Started once it has completed; RemainAfterExit keeps it active so
		// that units ordered After= it start after its success only.
		b.WriteString("Type=oneshot\nRemainAfterExit=yes\n")
	} else {
		b.WriteString("Type=simple\n")
	}
	command := p.Command
	if strings.ContainsRune(command, '/') && !filepath.IsAbs(command) {
		command = filepath.Join(p.Cwd, command) // as exec resolves it against the working directory
	}
	argv := append([]string{command}, p.Args...)
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = systemdQuote(a)
	}
	fmt.Fprintf(&b, "ExecStart=%s\n", strings.Join(quoted, " "))
	for _, k := range slices.Sorted(maps.Keys(p.Env)) {
		fmt.Fprintf(&b, "Environment=%s\n", systemdEnvQuote(k+"="+p.Env[k]))
	}
	switch post, timeout, ok := systemdReadyWait(p); {
	case p.Oneshot && p.Ready != nil:
		notes = append(notes, "ready: a oneshot is ready once it has completed; its probe is not carried")
	case ok:
		fmt.Fprintf(&b, "ExecStartPost=%s\nTimeoutStartSec=%s\n", post, timeout)
	case p.Ready != nil:
		notes = append(notes, "ready: a log probe has no systemd counterpart; the unit is started once spawned")
	}
	if p.Cwd != "" {
		if path, ok := systemdPath(p.Cwd); ok {
			fmt.Fprintf(&b, "WorkingDirectory=%s\n", path)
		} else {
			notes = append(notes, "cwd: a path with control characters cannot be written in a unit; not carried")
		}
	}
	logFile := p.LogFile
	if logFile == "" {
		logFile = logDir + "/" + p.Name + ".log"
	}
	if path, ok := systemdPath(logFile); ok {
		fmt.Fprintf(&b, "StandardOutput=append:%s\nStandardError=append:%s\n", path, path)
	} else {
		notes = append(notes, "log_file: a path with control characters cannot be written in a unit; output goes to the journal")
	}
	if p.LogMaxSize > 0 {
		notes = append(notes, fmt.Sprintf("log_max_size: %d bytes, log_backups: %d: systemd does not rotate an append: file; rotate it with logrotate (copytruncate), or drop StandardOutput=/StandardError= for the journal", p.LogMaxSize, p.LogBackups))
	}
	if p.LogTimestamps {
		notes = append(notes, "log_timestamps: not carried (the journal stamps every line)")
	}
	if r := p.Resources; r != nil {
		if r.MemoryMax > 0 {
			fmt.Fprintf(&b, "MemoryMax=%d\nMemorySwapMax=0\n", r.MemoryMax)
		}
		if r.CPUMax > 0 {
			fmt.Fprintf(&b, "CPUQuota=%s%%\n", strconv.FormatFloat(math.Round(r.CPUMax*10000)/100, 'f', -1, 64))
		}
	}
	b.WriteString("KillMode=control-group\n")
	fmt.Fprintf(&b, "KillSignal=SIG%s\n", p.StopSignal)
	fmt.Fprintf(&b, "TimeoutStopSec=%s\n", systemdSeconds(p.StopTimeout.Seconds()))
	switch restart {
	case RestartOnFailure, RestartAlways:
		fmt.Fprintf(&b, "Restart=%s\nRestartSec=%s\n", restart, systemdSeconds(p.Restart.Backoff.Seconds()))
		if p.Restart.MaxBackoff > p.Restart.Backoff {
			notes = append(notes, fmt.Sprintf("restart backoff doubling from %s up to max_backoff %s: RestartSteps=/RestartMaxDelaySec= need systemd 254; RestartSec= is the first delay", p.Restart.Backoff, p.Restart.MaxBackoff))
		}
	default:
		b.WriteString("Restart=no\n")
	}
	if p.Health != nil {
		what := "health"
		if p.Liveness != nil {
			what = "liveness probe and health"
		}
		notes = append(notes, fmt.Sprintf("%s: {every: %s, failures: %d}: systemd has no probe-driven health check (WatchdogSec= needs sd_notify from the process itself); not carried", what, p.Health.Every, p.Health.Failures))
	}
	b.WriteString("\n[Install]\nWantedBy=default.target\n")

	var head strings.Builder
	fmt.Fprintf(&head, "# Generated by devkit sup export systemd from %s.\n", commentSafe(configPath))
	if len(notes) > 0 {
		head.WriteString("# Not carried, or carried in part:\n")
		for _, n := range notes {
			fmt.Fprintf(&head, "#   %s\n", commentSafe(n))
		}
	}
	return head.String() + b.String()
}

// commentSafe keeps s on one comment line: control characters are
// written as Go escapes.
func commentSafe(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// systemdPath writes a path for a directive that takes one unquoted
// (WorkingDirectory=, append:): specifiers are escaped; a path with a
// control character cannot be written (ok is false).
func systemdPath(s string) (string, bool) {
	if strings.ContainsFunc(s, unicode.IsControl) {
		return "", false
	}
	return strings.ReplaceAll(s, "%", "%%"), true
}

func unitName(name string) string { return "devkit-" + name + ".service" }

// systemdReadyWait renders the ready probe as an ExecStartPost= command
// that waits until it passes (systemd counts the unit started only then),
// with the probe's timeout as TimeoutStartSec=. A log probe has no such
// form: ok is false.
func systemdReadyWait(p *Process) (cmd, timeout string, ok bool) {
	r := p.Ready
	if r == nil {
		return "", "", false
	}
	sleep := strconv.FormatFloat(r.Interval.Seconds(), 'f', -1, 64)
	var shell, check string
	switch {
	case r.TCP != "":
		host, port, _ := net.SplitHostPort(r.TCP) // the config parser accepted only host:port
		shell, check = "/bin/bash", fmt.Sprintf("(exec 3<>/dev/tcp/%s/%s) 2>/dev/null", host, port)
	case r.HTTP != "":
		shell, check = "/bin/sh", "curl -fsS -o /dev/null "+shellQuote(r.HTTP)
	case r.Exec != "":
		shell, check = "/bin/sh", r.Exec
	default:
		return "", "", false
	}
	// The check stands on lines of its own, so a multi-line exec probe or
	// one that ends in a comment is still a whole list.
	script := fmt.Sprintf("until\n%s\ndo sleep %s; done", check, sleep)
	return shell + " -c " + systemdQuote(script), systemdSeconds(r.Timeout.Seconds()), true
}

// shellQuote quotes s for sh as one word.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// systemdEnvQuote quotes one NAME=value assignment for Environment=. There,
// unlike in Exec lines, "$" has no special meaning (systemd.exec(5)), so it
// is left alone and reaches the process as itself; specifiers (%) are
// escaped, and the assignment is double-quoted with C-style escapes (a
// newline becomes \n: it cannot end the line).
func systemdEnvQuote(s string) string {
	return `"` + cEscape(strings.ReplaceAll(s, "%", "%%")) + `"`
}

// systemdQuote quotes a word for an Exec line: specifiers (%) and variable
// expansions ($) are escaped so the value reaches the process verbatim,
// and control characters are C-escaped inside double quotes.
func systemdQuote(s string) string {
	s = strings.ReplaceAll(s, "%", "%%")
	s = strings.ReplaceAll(s, "$", "$$")
	if s != "" && !strings.ContainsAny(s, " \t\"'\\;") && !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	return `"` + cEscape(s) + `"`
}

// cEscape escapes backslashes, double quotes and control characters as
// systemd's quoted strings read them back (systemd.syntax(7)).
func cEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if unicode.IsControl(r) && r < 0x80 {
				fmt.Fprintf(&b, `\x%02x`, r)
				continue
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

func systemdSeconds(sec float64) string {
	return strings.TrimSuffix(fmt.Sprintf("%.3f", sec), ".000") + "s"
}
