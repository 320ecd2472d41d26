package importer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// pcFile is the part of process-compose.yaml that maps onto ops.yaml. Its
// keys are read from the YAML node by node, so that every key outside it is
// a warning rather than silently ignored.
type pcProcess struct {
	Command      string
	WorkingDir   string
	Environment  []string
	DependsOn    map[string]string // name → condition
	Availability struct {
		Restart        string
		BackoffSeconds *float64
		MaxRestarts    *int
	}
	Readiness *pcProbe
	Liveness  *pcProbe
	ReadyLog  string
	Shutdown  struct {
		Signal  *int
		Timeout *float64
	}
}

type pcProbe struct {
	HTTP         string
	Exec         string
	InitialDelay float64
	Period       float64
	Failure      int
}

// ProcessCompose converts a process-compose.yaml. Commands run the way
// process-compose runs them, under its shell (bash -c unless the file's
// shell: says otherwise); top-level environment is merged into each process.
func ProcessCompose(file string, data []byte) (*Result, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty file", file)
		}
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: want a mapping holding processes", file)
	}
	w := &warner{file: file}
	shell, shellArg := "bash", "-c"
	var global []string
	var procsNode *yaml.Node
	err := eachKey(root.Content[0], func(key string, k, v *yaml.Node) error {
		switch key {
		case "version", "is_strict":
		case "processes":
			procsNode = v
		case "environment":
			return v.Decode(&global)
		case "shell":
			return eachKey(v, func(key string, k, v *yaml.Node) error {
				switch key {
				case "shell_command":
					shell = v.Value
				case "shell_argument":
					shellArg = v.Value
				default:
					w.add(lineOf(k)+"shell."+key, "no equivalent: ignored")
				}
				return nil
			})
		default:
			w.add(lineOf(k)+key, "no equivalent (devkit keeps one log per process, has no TUI or API server): ignored")
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if procsNode == nil || procsNode.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: no processes: mapping", file)
	}
	procs := map[string]*process{}
	oneshot := map[string]bool{}
	err = eachKey(procsNode, func(name string, k, v *yaml.Node) error {
		pc, err := pcReadProcess(w, name, v)
		if err != nil {
			return fmt.Errorf("line %d: processes.%s: %w", k.Line, name, err)
		}
		p := &process{Command: shell, Args: []string{shellArg, pc.Command}, Cwd: pc.WorkingDir}
		if len(global)+len(pc.Environment) > 0 {
			p.Env = map[string]string{}
			for _, kv := range append(append([]string{}, global...), pc.Environment...) {
				key, val, ok := strings.Cut(kv, "=")
				if !ok {
					return fmt.Errorf("line %d: processes.%s.environment: %q is not KEY=value", k.Line, name, kv)
				}
				p.Env[key] = val
			}
		}
		for _, dep := range sortedKeys(pc.DependsOn) {
			p.DependsOn = append(p.DependsOn, dep)
			switch cond := pc.DependsOn[dep]; cond {
			case "process_completed_successfully":
				oneshot[dep] = true
			case "process_completed":
				oneshot[dep] = true
				w.add("processes."+name+".depends_on."+dep, "process_completed: devkit waits for %s to exit 0 (a failed run stops the start)", dep)
			case "process_healthy", "":
			case "process_started":
				w.add("processes."+name+".depends_on."+dep, "process_started: devkit waits until %s is ready (its ready probe, or a short grace without one), not only started", dep)
			default:
				w.add("processes."+name+".depends_on."+dep, "condition %q unknown: waits until %s is ready", cond, dep)
			}
		}
		pcAvailability(w, name, pc, p)
		if pc.Shutdown.Signal != nil {
			if sig, ok := signalNames[*pc.Shutdown.Signal]; ok {
				p.StopSignal = sig
			} else {
				w.add("processes."+name+".shutdown.signal", "%d is not a stop signal devkit sends (1, 2, 3, 9, 10, 12, 15): TERM is used", *pc.Shutdown.Signal)
			}
		}
		if pc.Shutdown.Timeout != nil {
			p.StopTimeout = seconds(*pc.Shutdown.Timeout)
		}
		pcProbes(w, name, pc, p)
		procs[name] = p
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	for name := range oneshot {
		p, ok := procs[name]
		if !ok {
			return nil, fmt.Errorf("%s: a process depends on %q, which is not declared", file, name)
		}
		// A job others wait to complete: devkit's oneshot (start waits for it to exit 0).
		p.Oneshot = true
		if p.Restart != nil && p.Restart.Policy == "always" {
			w.add("processes."+name+".availability.restart", "always, on a process others wait to complete: devkit runs it once (oneshot)")
		}
		p.Restart = nil
	}
	if len(procs) == 0 {
		return nil, fmt.Errorf("%s: no process", file)
	}
	return render(file, "process-compose", procs, w.list)
}

func pcAvailability(w *warner, name string, pc *pcProcess, p *process) {
	a := pc.Availability
	mode := ""
	switch a.Restart {
	case "", "no":
		mode = "never"
	case "always":
		mode = "always"
	case "on_failure", "on-failure":
		mode = "on-failure"
	case "exit_on_failure":
		mode = "never"
		w.add("processes."+name+".availability.restart", "exit_on_failure: devkit does not stop the other processes when this one fails")
	default:
		w.add("processes."+name+".availability.restart", "%q unknown: never restarted", a.Restart)
		mode = "never"
	}
	if mode == "never" && a.BackoffSeconds == nil && a.MaxRestarts == nil {
		return
	}
	p.Restart = &restart{Policy: mode, MaxRestarts: a.MaxRestarts}
	if a.BackoffSeconds != nil && *a.BackoffSeconds > 0 {
		p.Restart.Backoff = seconds(*a.BackoffSeconds)
	}
}

func pcProbes(w *warner, name string, pc *pcProcess, p *process) {
	at := "processes." + name
	if r := pc.Readiness; r != nil {
		p.Ready = &ready{HTTP: r.HTTP, Exec: r.Exec}
		if r.Period > 0 {
			p.Ready.Interval = seconds(r.Period)
		}
		// process-compose gives up after initial delay + period × failure threshold.
		fails := max(r.Failure, 3)
		period := r.Period
		if period <= 0 {
			period = 10
		}
		p.Ready.Timeout = seconds(r.InitialDelay + period*float64(fails))
		if pc.ReadyLog != "" {
			w.add(at+".ready_log_line", "not imported: devkit has one ready probe, readiness_probe is used")
		}
	} else if pc.ReadyLog != "" {
		p.Ready = &ready{Log: regexp.QuoteMeta(pc.ReadyLog)}
	}
	if l := pc.Liveness; l != nil {
		same := pc.Readiness != nil && l.HTTP == pc.Readiness.HTTP && l.Exec == pc.Readiness.Exec
		if !same {
			w.add(at+".liveness_probe", "devkit's health re-runs the ready probe; this probe differs from readiness_probe and is not imported")
			return
		}
		p.Health = &health{Failures: max(l.Failure, 1)}
		if l.Period > 0 {
			p.Health.Every = seconds(l.Period)
		}
	}
}

// pcReadProcess reads one process, warning about every key it does not map.
func pcReadProcess(w *warner, name string, node *yaml.Node) (*pcProcess, error) {
	pc := &pcProcess{}
	at := func(k *yaml.Node, key string) string { return lineOf(k) + "processes." + name + "." + key }
	err := eachKey(node, func(key string, k, v *yaml.Node) error {
		var err error
		switch key {
		case "command":
			err = v.Decode(&pc.Command)
		case "working_dir":
			err = v.Decode(&pc.WorkingDir)
		case "environment":
			err = v.Decode(&pc.Environment)
		case "description":
			// Documentation only: nothing runs differently without it.
		case "depends_on":
			pc.DependsOn = map[string]string{}
			err = eachKey(v, func(dep string, _, dv *yaml.Node) error {
				return eachKey(dv, func(key string, k, v *yaml.Node) error {
					if key != "condition" {
						w.add(at(k, "depends_on."+dep+"."+key), "no equivalent: ignored")
						return nil
					}
					pc.DependsOn[dep] = v.Value
					return nil
				})
			})
		case "availability":
			err = eachKey(v, func(key string, k, v *yaml.Node) error {
				switch key {
				case "restart":
					return v.Decode(&pc.Availability.Restart)
				case "backoff_seconds":
					return v.Decode(&pc.Availability.BackoffSeconds)
				case "max_restarts":
					return v.Decode(&pc.Availability.MaxRestarts)
				}
				w.add(at(k, "availability."+key), "no equivalent: ignored")
				return nil
			})
		case "readiness_probe", "liveness_probe":
			var pr *pcProbe
			if pr, err = pcReadProbe(w, at(k, key), v); key == "readiness_probe" {
				pc.Readiness = pr
			} else {
				pc.Liveness = pr
			}
		case "ready_log_line":
			err = v.Decode(&pc.ReadyLog)
		case "shutdown":
			err = eachKey(v, func(key string, k, v *yaml.Node) error {
				switch key {
				case "signal":
					return v.Decode(&pc.Shutdown.Signal)
				case "timeout_seconds":
					return v.Decode(&pc.Shutdown.Timeout)
				}
				w.add(at(k, "shutdown."+key), "no equivalent (devkit stops by signal, then SIGKILL after stop_timeout): ignored")
				return nil
			})
		case "disabled":
			if v.Value == "true" {
				w.add(at(k, key), "imported anyway: start the others by name to leave it out")
			}
		default:
			w.add(at(k, key), "no equivalent: ignored")
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(pc.Command) == "" {
		return nil, errors.New("no command")
	}
	return pc, nil
}

func pcReadProbe(w *warner, at string, node *yaml.Node) (*pcProbe, error) {
	pr := &pcProbe{}
	err := eachKey(node, func(key string, k, v *yaml.Node) error {
		switch key {
		case "http_get":
			host, scheme, path, port := "127.0.0.1", "http", "/", ""
			err := eachKey(v, func(key string, k, v *yaml.Node) error {
				switch key {
				case "host":
					host = v.Value
				case "scheme":
					scheme = strings.ToLower(v.Value)
				case "path":
					path = v.Value
				case "port":
					port = v.Value
				default:
					w.add(at+".http_get."+key, "no equivalent: ignored")
				}
				return nil
			})
			if port != "" {
				host += ":" + port
			}
			if !strings.HasPrefix(path, "/") {
				path = "/" + path
			}
			pr.HTTP = scheme + "://" + host + path
			return err
		case "exec":
			return eachKey(v, func(key string, k, v *yaml.Node) error {
				if key == "command" {
					pr.Exec = v.Value
				} else {
					w.add(at+".exec."+key, "no equivalent (the probe runs in the process's directory): ignored")
				}
				return nil
			})
		case "initial_delay_seconds":
			return v.Decode(&pr.InitialDelay)
		case "period_seconds":
			return v.Decode(&pr.Period)
		case "failure_threshold":
			return v.Decode(&pr.Failure)
		case "timeout_seconds", "success_threshold":
			w.add(at+"."+key, "%s: devkit's probes have no per-attempt %s", v.Value, strings.ReplaceAll(key, "_", " "))
		default:
			w.add(at+"."+key, "no equivalent: ignored")
		}
		return nil
	})
	if err == nil && pr.HTTP == "" && pr.Exec == "" {
		err = errors.New(at + ": neither http_get nor exec")
	}
	return pr, err
}

// eachKey calls fn for each key of a mapping node, in the file's order.
func eachKey(node *yaml.Node, fn func(key string, k, v *yaml.Node) error) error {
	if node.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: want a mapping", node.Line)
	}
	for i := 0; i+1 < len(node.Content); i += 2 {
		if err := fn(node.Content[i].Value, node.Content[i], node.Content[i+1]); err != nil {
			return err
		}
	}
	return nil
}

func lineOf(k *yaml.Node) string { return "line " + strconv.Itoa(k.Line) + ": " }
