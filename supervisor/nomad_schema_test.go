package supervisor

// The job schema below follows Nomad's documented job specification
// (developer.hashicorp.com/nomad/docs/job-specification: job, group,
// network/port, task, lifecycle, config for raw_exec, env, restart,
// service, check, check_restart) for the blocks and arguments an export
// may write. Decoding with it is what Nomad's HCL2 jobspec parser does
// first: an unknown or misplaced argument, a quoted argument name, a
// block given as an attribute or a value of the wrong type fails here as
// it fails there. Nomad's own module is not a dependency (its licence is
// not open source from 1.7 on); hcl/v2 is.

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
)

type nomadFile struct {
	Jobs []nomadJobSpec `hcl:"job,block"`
}

type nomadJobSpec struct {
	Name        string           `hcl:"name,label"`
	Type        *string          `hcl:"type,optional"`
	Datacenters []string         `hcl:"datacenters,optional"`
	Groups      []nomadGroupSpec `hcl:"group,block"`
}

type nomadGroupSpec struct {
	Name     string             `hcl:"name,label"`
	Count    *int               `hcl:"count,optional"`
	Network  *nomadNetworkSpec  `hcl:"network,block"`
	Restart  *nomadRestartSpec  `hcl:"restart,block"`
	Services []nomadServiceSpec `hcl:"service,block"`
	Tasks    []nomadTaskSpec    `hcl:"task,block"`
}

type nomadNetworkSpec struct {
	Mode  *string         `hcl:"mode,optional"`
	Ports []nomadPortSpec `hcl:"port,block"`
}

type nomadPortSpec struct {
	Label  string `hcl:"label,label"`
	Static *int   `hcl:"static,optional"`
	To     *int   `hcl:"to,optional"`
}

type nomadTaskSpec struct {
	Name        string              `hcl:"name,label"`
	Driver      string              `hcl:"driver"`
	Leader      *bool               `hcl:"leader,optional"`
	KillSignal  *string             `hcl:"kill_signal,optional"`
	KillTimeout *string             `hcl:"kill_timeout,optional"`
	Lifecycle   *nomadLifecycleSpec `hcl:"lifecycle,block"`
	Config      *rawExecConfigSpec  `hcl:"config,block"`
	Env         *nomadEnvSpec       `hcl:"env,block"`
	Restart     *nomadRestartSpec   `hcl:"restart,block"`
	Services    []nomadServiceSpec  `hcl:"service,block"`
	Resources   *nomadResourcesSpec `hcl:"resources,block"`
}

// nomadResourcesSpec is a task's resources block (cpu in MHz, memory in MiB).
type nomadResourcesSpec struct {
	CPU       *int `hcl:"cpu,optional"`
	Cores     *int `hcl:"cores,optional"`
	Memory    *int `hcl:"memory,optional"`
	MemoryMax *int `hcl:"memory_max,optional"`
}

type nomadLifecycleSpec struct {
	Hook    string `hcl:"hook"`
	Sidecar *bool  `hcl:"sidecar,optional"`
}

// rawExecConfigSpec is the config block of the raw_exec driver.
type rawExecConfigSpec struct {
	Command string   `hcl:"command"`
	Args    []string `hcl:"args,optional"`
}

// nomadEnvSpec holds the env block's arguments, whatever their names.
type nomadEnvSpec struct {
	Body hcl.Body `hcl:",remain"`
}

type nomadRestartSpec struct {
	Attempts *int    `hcl:"attempts,optional"`
	Delay    *string `hcl:"delay,optional"`
	Interval *string `hcl:"interval,optional"`
	Mode     *string `hcl:"mode,optional"`
}

type nomadServiceSpec struct {
	Name     *string          `hcl:"name,optional"`
	Port     *string          `hcl:"port,optional"`
	Provider *string          `hcl:"provider,optional"`
	Tags     []string         `hcl:"tags,optional"`
	Checks   []nomadCheckSpec `hcl:"check,block"`
}

type nomadCheckSpec struct {
	Type         string                 `hcl:"type"`
	Name         *string                `hcl:"name,optional"`
	Port         *string                `hcl:"port,optional"`
	Path         *string                `hcl:"path,optional"`
	Protocol     *string                `hcl:"protocol,optional"`
	Command      *string                `hcl:"command,optional"`
	Args         []string               `hcl:"args,optional"`
	Interval     string                 `hcl:"interval"`
	Timeout      string                 `hcl:"timeout"`
	Task         *string                `hcl:"task,optional"`
	CheckRestart *nomadCheckRestartSpec `hcl:"check_restart,block"`
}

type nomadCheckRestartSpec struct {
	Limit          *int    `hcl:"limit,optional"`
	Grace          *string `hcl:"grace,optional"`
	IgnoreWarnings *bool   `hcl:"ignore_warnings,optional"`
}

// parseNomadJob parses src as HCL2 and decodes it against the job schema,
// checking what the schema's types cannot: durations, enumerations, ports.
func parseNomadJob(t *testing.T, src string) nomadJobSpec {
	t.Helper()
	f, diags := hclparse.NewParser().ParseHCL([]byte(src), "job.nomad.hcl")
	if diags.HasErrors() {
		t.Fatalf("HCL2 parse: %s\n%s", diags.Error(), src)
	}
	var file nomadFile
	if diags := gohcl.DecodeBody(f.Body, nil, &file); diags.HasErrors() {
		t.Fatalf("Nomad job schema: %s\n%s", diags.Error(), src)
	}
	if len(file.Jobs) != 1 {
		t.Fatalf("%d jobs, want 1", len(file.Jobs))
	}
	job := file.Jobs[0]
	duration := func(what string, s *string) {
		if s == nil {
			return
		}
		if _, err := time.ParseDuration(*s); err != nil {
			t.Errorf("%s = %q: not a duration", what, *s)
		}
	}
	oneOf := func(what string, s *string, allowed ...string) {
		if s == nil {
			return
		}
		for _, a := range allowed {
			if *s == a {
				return
			}
		}
		t.Errorf("%s = %q, want one of %v", what, *s, allowed)
	}
	for _, g := range job.Groups {
		ports := map[string]bool{}
		if g.Network != nil {
			for _, p := range g.Network.Ports {
				ports[p.Label] = true
			}
		}
		for _, task := range g.Tasks {
			where := fmt.Sprintf("task %s", task.Name)
			if task.Config == nil {
				t.Errorf("%s: no config block", where)
			}
			duration(where+" kill_timeout", task.KillTimeout)
			if task.Lifecycle != nil {
				oneOf(where+" lifecycle.hook", &task.Lifecycle.Hook, "prestart", "poststart", "poststop")
			}
			if task.Env != nil {
				if _, diags := task.Env.Body.JustAttributes(); diags.HasErrors() {
					t.Errorf("%s env: %s", where, diags.Error())
				}
			}
			if r := task.Restart; r != nil {
				duration(where+" restart.delay", r.Delay)
				duration(where+" restart.interval", r.Interval)
				oneOf(where+" restart.mode", r.Mode, "fail", "delay")
			}
			for _, s := range task.Services {
				oneOf(where+" service.provider", s.Provider, "consul", "nomad")
				if s.Port != nil && !ports[*s.Port] {
					t.Errorf("%s: service port %q is not a port of the group's network", where, *s.Port)
				}
				for _, c := range s.Checks {
					oneOf(where+" check.type", &c.Type, "tcp", "http", "script", "grpc")
					duration(where+" check.interval", &c.Interval)
					duration(where+" check.timeout", &c.Timeout)
					if c.Type == "script" && (s.Provider == nil || *s.Provider != "consul") {
						t.Errorf("%s: a script check needs the consul provider", where)
					}
					if c.CheckRestart != nil {
						duration(where+" check_restart.grace", c.CheckRestart.Grace)
					}
				}
			}
		}
	}
	return job
}
