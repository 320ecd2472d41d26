//go:build !devkit_sup_monitor

package supervisor

// A Procfile (foreman, overmind, hivemind, Heroku) is a config too: one
// process a line, "name: command". It is read as foreman reads it, so a
// stack moved from foreman keeps its ports: PORT is 5000 (or the PORT
// of .env or of the environment) for the first line, +100 for each next.

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/devkit-go/devkit/supervisor/internal/proc"
)

// Procfile port assignment, as foreman's: the base port (PORT of .env or
// of the environment, else ProcfileBasePort) plus PortStep per line.
const (
	ProcfileBasePort = 5000
	ProcfilePortStep = 100
)

// procfileLine is foreman's line syntax.
var procfileLine = regexp.MustCompile(`^([A-Za-z0-9_.-]+):\s*(.+)$`)

// IsProcfile reports whether the config at path with contents data is a
// Procfile: its file name is Procfile or Procfile.* (Procfile.dev), or
// the file is not named *.yaml, *.yml or *.json and every line that is
// neither blank nor a comment is "name: command" at the start of the line,
// none of them processes: (an ops.yaml with a mistake stays a YAML error).
func IsProcfile(path string, data []byte) bool {
	base := filepath.Base(path)
	if base == "Procfile" || strings.HasPrefix(base, "Procfile.") {
		return true
	}
	switch strings.ToLower(filepath.Ext(base)) {
	case ".yaml", ".yml", ".json":
		return false
	}
	lines := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := procfileLine.FindStringSubmatch(line)
		if m == nil || m[1] == "processes" || sc.Text()[0] == ' ' || sc.Text()[0] == '\t' {
			return false
		}
		lines++
	}
	return sc.Err() == nil && lines > 0
}

// parseProcfile reads a Procfile: each process runs its command through
// the shell, in the Procfile's directory, with PORT (foreman's numbering)
// and PS (name.1) set, and the .env file beside it, when there is one, as
// its env_file (foreman and overmind read it too). Everything else has
// the YAML defaults.
func parseProcfile(path string, data []byte, lookup func(string) (string, bool)) (*Config, error) {
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	p := &parser{file: path, dir: dir}
	var dotenv map[string]string
	envFile := filepath.Join(dir, ".env")
	if b, err := os.ReadFile(envFile); err == nil {
		if dotenv, err = parseEnvFile(b); err != nil {
			return nil, p.errorf(nil, "", "%s: %v", envFile, err)
		}
	} else {
		envFile = ""
	}
	// foreman's base port: PORT from .env, else from the environment, else 5000.
	base := ProcfileBasePort
	port, ok := dotenv["PORT"]
	if !ok && lookup != nil {
		port, ok = lookup("PORT")
	}
	if ok && port != "" {
		if base, err = strconv.Atoi(port); err != nil || base < 1 || base > 65535 {
			return nil, p.errorf(nil, "", "PORT=%q (the base port, from .env or the environment) is not a port", port)
		}
	}
	cfg := &Config{Path: path, Processes: map[string]*Process{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	index := 0
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		at := &yaml.Node{Line: n}
		m := procfileLine.FindStringSubmatch(line)
		if m == nil {
			return nil, p.errorf(at, "", "%q is not \"name: command\"", line)
		}
		name, command := m[1], strings.TrimSpace(m[2])
		field := "processes." + name
		if err := ValidName(name); err != nil {
			return nil, p.errorf(at, field, "%v", err)
		}
		if _, dup := cfg.Processes[name]; dup {
			return nil, p.errorf(at, field, "declared twice")
		}
		shell, args := proc.ShellCommand(command)
		env := map[string]string{}
		for k, v := range dotenv {
			env[k] = v
		}
		env["PORT"] = strconv.Itoa(base + ProcfilePortStep*index)
		env["PS"] = name + ".1"
		cfg.Processes[name] = &Process{
			Name: name, Command: shell, Args: args, Env: env, EnvFile: envFile, Cwd: dir,
			StopSignal: DefaultStopSignal, StopTimeout: DefaultStopTimeout,
			Restart:    RestartPolicy{Mode: RestartNever, MaxRestarts: DefaultMaxRestarts, Backoff: DefaultBackoff, MaxBackoff: DefaultMaxBackoff},
			LogMaxSize: DefaultLogMaxSize, LogBackups: DefaultLogBackups,
		}
		index++
	}
	if err := sc.Err(); err != nil {
		return nil, p.errorf(nil, "", "%v", err)
	}
	if index == 0 {
		return nil, p.errorf(nil, "", "no process: want \"name: command\" lines")
	}
	order, err := dependencyOrder(cfg.Processes)
	if err != nil {
		return nil, err
	}
	cfg.Order = order
	return cfg, nil
}
