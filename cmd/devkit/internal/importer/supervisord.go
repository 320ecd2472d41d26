package importer

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	shellwords "github.com/mattn/go-shellwords"
	"gopkg.in/ini.v1"
)

// Supervisord converts a supervisord.conf: each [program:x] becomes a
// process. data is the file's content; file names it in warnings and
// resolves %(here)s. The mapping follows supervisord's documented
// [program:x] keys; every other section and key is a warning.
func Supervisord(file string, data []byte) (*Result, error) {
	cfg, err := ini.LoadSources(ini.LoadOptions{
		AllowPythonMultilineValues: true, // configparser's indented continuation lines
		SpaceBeforeInlineComment:   true, // " ;comment" ends a value, "a;b" does not
		PreserveSurroundedQuote:    true, // configparser keeps quotes; the command's shlex split removes them
		Insensitive:                false,
	}, data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	w := &warner{file: file}
	here, _ := filepath.Abs(filepath.Dir(file))
	procs := map[string]*process{}
	for _, sec := range cfg.Sections() {
		name := sec.Name()
		switch {
		case name == ini.DefaultSection:
			if len(sec.Keys()) > 0 {
				w.add("(before any section)", "%d key(s) ignored", len(sec.Keys()))
			}
		case strings.HasPrefix(name, "program:"):
			prog := strings.TrimSpace(strings.TrimPrefix(name, "program:"))
			p, err := supervisordProgram(w, prog, here, sec)
			if err != nil {
				return nil, fmt.Errorf("%s: [%s]: %w", file, name, err)
			}
			procs[prog] = p
		case name == "supervisord" || name == "supervisorctl" || name == "unix_http_server" ||
			name == "inet_http_server" || strings.HasPrefix(name, "rpcinterface:"):
			w.add("["+name+"]", "the daemon's own settings have no equivalent (devkit sup runs no daemon): ignored")
		case name == "include":
			w.add("[include]", "files=%q are not read: import each included file as well", sec.Key("files").String())
		case strings.HasPrefix(name, "group:"):
			w.add("["+name+"]", "groups have no equivalent: programs=%q are imported one by one (start them together by name)", sec.Key("programs").String())
		default:
			w.add("["+name+"]", "section not supported (eventlistener and fcgi-program have no equivalent): ignored")
		}
	}
	if len(procs) == 0 {
		return nil, fmt.Errorf("%s: no [program:x] section", file)
	}
	return render(file, "supervisord", procs, w.list)
}

// expansion matches supervisord's Python %-expansions: %(name)s, %(process_num)02d, and %%.
var expansion = regexp.MustCompile(`%%|%\(([A-Za-z0-9_]+)\)([-#0 +]*[0-9]*)([sd])`)

// expand turns supervisord's expansions into ops.yaml's: %(ENV_X)s becomes
// ${X}, the names of the program and of its file are substituted, and a
// literal "${" is escaped so that ops.yaml does not interpolate it.
func expand(w *warner, where, prog, here, s string) string {
	s = strings.ReplaceAll(s, "${", "$${")
	return expansion.ReplaceAllStringFunc(s, func(m string) string {
		if m == "%%" {
			return "%"
		}
		sub := expansion.FindStringSubmatch(m)
		key, flags, verb := sub[1], sub[2], sub[3]
		var v any
		switch {
		case strings.HasPrefix(key, "ENV_"):
			return "${" + strings.TrimPrefix(key, "ENV_") + "}"
		case key == "program_name" || key == "group_name":
			v = prog
		case key == "process_num":
			v = 0
		case key == "here":
			v = here
		default:
			w.add(where, "expansion %s not supported: kept as written", m)
			return m
		}
		if verb == "d" {
			if n, ok := v.(int); ok {
				return fmt.Sprintf("%"+flags+"d", n)
			}
		}
		return fmt.Sprintf("%"+flags+"v", v)
	})
}

func supervisordProgram(w *warner, prog, here string, sec *ini.Section) (*process, error) {
	p := &process{}
	where := "[program:" + prog + "]"
	at := func(key string) string { return where + " " + key }
	val := func(k *ini.Key) string { return expand(w, at(k.Name()), prog, here, strings.TrimSpace(k.String())) }
	// supervisord restarts on unexpected exits by default (autorestart=unexpected).
	restartMode, exitcodes := "unexpected", "0"
	var stdout, stderr, redirect string
	for _, k := range sec.Keys() {
		v := val(k)
		switch k.Name() {
		case "command":
			if err := supervisordCommand(w, at("command"), p, v); err != nil {
				return nil, err
			}
		case "directory":
			p.Cwd = v
		case "environment":
			env, err := supervisordEnv(v)
			if err != nil {
				return nil, fmt.Errorf("environment: %w", err)
			}
			p.Env = env
		case "autorestart":
			restartMode = strings.ToLower(v)
		case "exitcodes":
			exitcodes = v
		case "startretries":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("startretries: %q is not a count", v)
			}
			p.Restart = &restart{MaxRestarts: &n}
		case "stopsignal":
			sig, ok := stopSignal(v)
			if !ok {
				w.add(at("stopsignal"), "%q is not a stop signal devkit sends (TERM, INT, HUP, QUIT, KILL, USR1, USR2): TERM is used", v)
				continue
			}
			p.StopSignal = sig
		case "stopwaitsecs":
			n, err := strconv.ParseFloat(v, 64)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("stopwaitsecs: %q is not a number of seconds", v)
			}
			p.StopTimeout = seconds(n)
		case "stopasgroup", "killasgroup":
			if !isTrue(v) {
				w.add(at(k.Name()), "devkit always signals the process's whole tree (its group, session and cgroup), not only the process")
			}
		case "stdout_logfile":
			stdout = v
		case "stderr_logfile":
			stderr = v
		case "redirect_stderr":
			redirect = v
		case "stdout_logfile_maxbytes":
			size, ok := supervisordSize(v)
			if !ok {
				w.add(at(k.Name()), "%q: not rotated by size in devkit; the default size is used", v)
				continue
			}
			p.LogMaxSize = size
		case "stdout_logfile_backups":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("stdout_logfile_backups: %q is not a count", v)
			}
			p.LogBackups = &n
		case "numprocs":
			if v != "1" {
				w.add(at("numprocs"), "%s copies: one process is imported; copy the entry for each further one", v)
			}
		case "process_name":
			if strings.TrimSpace(k.String()) != "%(program_name)s" {
				w.add(at("process_name"), "%q: the process is named %q", k.String(), prog)
			}
		case "autostart":
			if !isTrue(v) {
				w.add(at("autostart"), "devkit sup start --all starts every process: start the others by name to leave this one out")
			}
		case "startsecs":
			w.add(at("startsecs"), "%ss: devkit counts a start as good once its ready probe passes (or after a short grace without one); add a ready: probe", v)
		case "priority":
			w.add(at("priority"), "%s: devkit orders starts by depends_on, not by priority; add depends_on where order matters", v)
		case "user":
			w.add(at("user"), "%q: the process runs as the user who runs devkit sup", v)
		default:
			w.add(at(k.Name()), "no equivalent: ignored")
		}
	}
	if p.Command == "" {
		return nil, fmt.Errorf("no command")
	}
	switch restartMode {
	case "true":
		restartMode = "always"
	case "false":
		restartMode = "never"
	case "unexpected":
		restartMode = "on-failure"
		if exitcodes != "0" {
			w.add(at("exitcodes"), "%q: devkit counts only exit 0 as expected (on-failure restarts on any other code)", exitcodes)
		}
	default:
		return nil, fmt.Errorf("autorestart: %q is not true, false or unexpected", restartMode)
	}
	if p.Restart == nil {
		p.Restart = &restart{}
	}
	p.Restart.Policy = restartMode
	supervisordLogs(w, where, p, stdout, stderr, redirect)
	return p, nil
}

// supervisordCommand splits a command line as supervisord does (shlex, no
// shell). A line with shell operators, which supervisord would have passed
// as arguments, is refused rather than guessed at.
func supervisordCommand(w *warner, where string, p *process, line string) error {
	parser := shellwords.NewParser()
	args, err := parser.Parse(line)
	if err != nil {
		return fmt.Errorf("command: %q: %w", line, err)
	}
	if parser.Position >= 0 {
		w.add(where, "%q holds a shell operator, which supervisord passes to the program as an argument: run as sh -c instead", line)
		p.Command, p.Args = "sh", []string{"-c", line}
		return nil
	}
	if len(args) == 0 {
		return fmt.Errorf("command: empty")
	}
	p.Command, p.Args = args[0], args[1:]
	return nil
}

// supervisordEnv parses environment=KEY="value",KEY2=value2.
func supervisordEnv(s string) (map[string]string, error) {
	env := map[string]string{}
	for s = strings.TrimSpace(s); s != ""; {
		k, rest, ok := strings.Cut(s, "=")
		if !ok {
			return nil, fmt.Errorf("%q has no '='", s)
		}
		k = strings.TrimSpace(k)
		rest = strings.TrimLeft(rest, " \t\n")
		var v string
		if rest != "" && (rest[0] == '"' || rest[0] == '\'') {
			end := strings.IndexByte(rest[1:], rest[0])
			if end < 0 {
				return nil, fmt.Errorf("%s: unterminated quote", k)
			}
			v, rest = rest[1:end+1], rest[end+2:]
		} else {
			v, rest, _ = strings.Cut(rest, ",")
			rest = "," + rest
		}
		env[k] = strings.TrimSpace(v)
		rest = strings.TrimSpace(rest)
		if rest != "" && rest[0] != ',' {
			return nil, fmt.Errorf("%s: want ',' after the value, got %q", k, rest)
		}
		s = strings.TrimSpace(strings.TrimPrefix(rest, ","))
	}
	return env, nil
}

// supervisordSize turns 50MB (supervisord counts KB as 1024) into 50MiB.
func supervisordSize(s string) (string, bool) {
	num, unit := s, ""
	for _, u := range []string{"KB", "MB", "GB"} {
		if strings.HasSuffix(strings.ToUpper(s), u) {
			num, unit = strings.TrimSpace(s[:len(s)-2]), u[:1]+"iB"
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 { // 0 means "never rotate", which devkit does not offer
		return "", false
	}
	if unit == "" {
		unit = "B"
	}
	return strconv.FormatInt(n, 10) + unit, true
}

// supervisordLogs maps stdout_logfile and stderr_logfile onto devkit's one
// log per process (stdout and stderr both).
func supervisordLogs(w *warner, where string, p *process, stdout, stderr, redirect string) {
	auto := func(s string) bool { return s == "" || strings.EqualFold(s, "AUTO") }
	switch {
	case strings.EqualFold(stdout, "NONE"):
		w.add(where+" stdout_logfile", "NONE: devkit always keeps a log; the default one is used")
	case !auto(stdout):
		p.LogFile = stdout
	}
	if stderr != "" && !auto(stderr) && stderr != stdout && !isTrue(redirect) {
		w.add(where+" stderr_logfile", "%q: devkit writes stderr to the same log as stdout (%s)", stderr, orDefault(p.LogFile))
	}
}

func orDefault(s string) string {
	if s == "" {
		return "the default log"
	}
	return s
}

func isTrue(s string) bool {
	switch strings.ToLower(s) {
	case "true", "yes", "on", "1":
		return true
	}
	return false
}
