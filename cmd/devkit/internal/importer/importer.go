// Package importer converts other process managers' configurations —
// supervisord's INI files and process-compose's YAML — into devkit's
// ops.yaml, for `devkit sup import`.
//
// Invariant: nothing of the source is dropped silently. Every section, key
// or value that has no exact equivalent in ops.yaml becomes a warning that
// names it (file, section or process, field) and says what was done
// instead; the output holds only what the supervisor's parser accepts.
//
// The package lives in cmd/devkit rather than in the supervisor module: it
// is a command's conversion, not a library API, and internal keeps it out
// of the Go APIs the project promises to keep stable.
package importer

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Result is an ops.yaml and what the conversion could not carry over.
type Result struct {
	YAML     []byte
	Warnings []string
}

// process is one entry of ops.yaml's processes, in the order its fields
// are written.
type process struct {
	Command     string            `yaml:"command"`
	Args        []string          `yaml:"args,omitempty"`
	Cwd         string            `yaml:"cwd,omitempty"`
	Env         map[string]string `yaml:"env,omitempty"`
	EnvFile     string            `yaml:"env_file,omitempty"`
	LogFile     string            `yaml:"log_file,omitempty"`
	LogMaxSize  string            `yaml:"log_max_size,omitempty"`
	LogBackups  *int              `yaml:"log_backups,omitempty"`
	StopSignal  string            `yaml:"stop_signal,omitempty"`
	StopTimeout string            `yaml:"stop_timeout,omitempty"`
	DependsOn   []string          `yaml:"depends_on,omitempty"`
	Oneshot     bool              `yaml:"oneshot,omitempty"`
	Restart     *restart          `yaml:"restart,omitempty"`
	Ready       *ready            `yaml:"ready,omitempty"`
	Health      *health           `yaml:"health,omitempty"`
}

type restart struct {
	Policy      string `yaml:"policy"`
	MaxRestarts *int   `yaml:"max_restarts,omitempty"`
	Backoff     string `yaml:"backoff,omitempty"`
}

type ready struct {
	HTTP     string `yaml:"http,omitempty"`
	Exec     string `yaml:"exec,omitempty"`
	Log      string `yaml:"log,omitempty"`
	Timeout  string `yaml:"timeout,omitempty"`
	Interval string `yaml:"interval,omitempty"`
}

type health struct {
	Every    string `yaml:"every,omitempty"`
	Failures int    `yaml:"failures,omitempty"`
}

// warner collects warnings as "file: where: message".
type warner struct {
	file string
	list []string
}

func (w *warner) add(where, format string, a ...any) {
	w.list = append(w.list, fmt.Sprintf("%s: %s: %s", w.file, where, fmt.Sprintf(format, a...)))
}

// render writes the processes as an ops.yaml with a header naming the source.
func render(source, format string, procs map[string]*process, warnings []string) (*Result, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Converted from %s (%s) by devkit sup import.\n", source, format)
	if len(warnings) > 0 {
		fmt.Fprintf(&b, "# %d thing(s) had no exact equivalent; devkit sup import printed them on stderr.\n", len(warnings))
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(map[string]any{"processes": procs}); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return &Result{YAML: b.Bytes(), Warnings: warnings}, nil
}

// seconds formats a whole or fractional number of seconds as a duration.
func seconds(s float64) string {
	return (time.Duration(s * float64(time.Second))).String()
}

// signalNames maps the signals ops.yaml's stop_signal accepts by number.
var signalNames = map[int]string{1: "HUP", 2: "INT", 3: "QUIT", 9: "KILL", 10: "USR1", 12: "USR2", 15: "TERM"}

// stopSignal checks a signal name against those ops.yaml accepts.
func stopSignal(s string) (string, bool) {
	name := strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(s)), "SIG")
	if n, err := strconv.Atoi(name); err == nil {
		name = signalNames[n]
	}
	for _, ok := range signalNames {
		if name == ok {
			return name, true
		}
	}
	return "", false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
