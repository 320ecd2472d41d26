package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// ReloadAction is what reload does for one process.
type ReloadAction string

// Reload actions, as in the seed's reconcile.
const (
	ReloadNone    ReloadAction = "none"    // unchanged (or removed and not running)
	ReloadStop    ReloadAction = "stop"    // removed from the YAML but running
	ReloadRestart ReloadAction = "restart" // changed while running
	ReloadRecord  ReloadAction = "record"  // changed while stopped: record the new digest only
	ReloadStart   ReloadAction = "start"   // added to the YAML (never applied): start it
)

// ReloadStep is one line of a reload plan.
type ReloadStep struct {
	Name   string       `json:"name"`
	Action ReloadAction `json:"action"`
	Reason string       `json:"reason"`
}

// ReloadPlan classifies every process of the union of YAML names and
// records, removed ones first, then the YAML's in dependency order. It
// changes nothing: Reload executes exactly this plan.
func (s *Supervisor) ReloadPlan(ctx context.Context) ([]ReloadStep, error) {
	names, err := s.Names()
	if err != nil {
		return nil, err
	}
	sts, err := s.status(ctx, names, false, nil) // a plan changes nothing, not even stale records
	if err != nil {
		return nil, err
	}
	var removed, kept []ReloadStep
	for _, st := range sts {
		live := st.State == StateRunning || st.State == StateRestarting || st.State == StateOrphaned
		spec, ok := s.spec(st.Name)
		if !ok {
			step := ReloadStep{Name: st.Name, Action: ReloadNone, Reason: "removed from the YAML, not running"}
			if live {
				step = ReloadStep{Name: st.Name, Action: ReloadStop, Reason: "removed from the YAML"}
			}
			removed = append(removed, step)
			continue
		}
		want := spec.Digest()
		var have string
		if live {
			if rec, err := s.home.ReadRecord(st.Name); err == nil && rec != nil {
				have = rec.Digest
			}
		} else if have, err = s.home.ReadApplied(st.Name); err != nil {
			return nil, err
		}
		switch {
		case !live && have == "" && st.ExitedAt == nil && spec.Disabled:
			kept = append(kept, ReloadStep{Name: st.Name, Action: ReloadNone, Reason: "disabled: start it by name"})
		case !live && have == "" && st.ExitedAt == nil:
			kept = append(kept, ReloadStep{Name: st.Name, Action: ReloadStart, Reason: "added"})
		case have == want:
			kept = append(kept, ReloadStep{Name: st.Name, Action: ReloadNone, Reason: "unchanged"})
		case live:
			kept = append(kept, ReloadStep{Name: st.Name, Action: ReloadRestart, Reason: "spec changed while running"})
		default:
			kept = append(kept, ReloadStep{Name: st.Name, Action: ReloadRecord, Reason: "spec changed while stopped"})
		}
	}
	// A dependent that asks for it restarts with its dependencies.
	action := map[string]ReloadAction{}
	for i, step := range kept {
		spec, ok := s.spec(step.Name)
		if !ok {
			continue // kept names come from the config; a removed one has no dependencies to follow
		}
		for _, d := range spec.DependsOn {
			if step.Action == ReloadNone && spec.RestartWithDependencies && action[d] == ReloadRestart && statusNamed(sts, step.Name).State == StateRunning {
				kept[i] = ReloadStep{Name: step.Name, Action: ReloadRestart, Reason: "dependency " + d + " restarts (restart_with_dependencies)"}
				step = kept[i]
			}
		}
		action[step.Name] = kept[i].Action
	}
	return append(removed, kept...), nil
}

func statusNamed(sts []ProcessStatus, name string) ProcessStatus {
	for _, s := range sts {
		if s.Name == name {
			return s
		}
	}
	return ProcessStatus{}
}

// Reload computes the plan and executes it step by step: stop what was
// removed, restart what changed while running (dependencies first), record
// the digest of what changed while stopped. It returns the plan and stops
// at the first failing step.
func (s *Supervisor) Reload(ctx context.Context) ([]ReloadStep, error) {
	plan, err := s.ReloadPlan(ctx)
	if err != nil {
		return nil, err
	}
	for _, step := range plan {
		if err := s.apply(ctx, step); err != nil {
			return plan, fmt.Errorf("reload %s (%s): %w", step.Name, step.Action, err)
		}
	}
	return plan, nil
}

func (s *Supervisor) apply(ctx context.Context, step ReloadStep) error {
	switch step.Action {
	case ReloadStop:
		if _, err := s.stopOne(ctx, step.Name, StopOptions{}); err != nil {
			return err
		}
		return s.home.RemoveApplied(step.Name)
	case ReloadRestart:
		if _, err := s.stopOne(ctx, step.Name, StopOptions{}); err != nil {
			return err
		}
		spec, ok := s.spec(step.Name)
		if !ok {
			return s.notConfigured(step.Name)
		}
		_, err := s.startOne(ctx, spec, nil)
		return err
	case ReloadRecord:
		spec, ok := s.spec(step.Name)
		if !ok {
			return s.notConfigured(step.Name)
		}
		return s.home.WriteApplied(step.Name, spec.Digest())
	case ReloadStart:
		_, err := s.Start(ctx, []string{step.Name})
		return err
	}
	return nil
}

// Restart stops names (dependents first) and starts them again
// (dependencies first). A name that was not running is simply started.
//
// A name the YAML does not declare (or that was loaded without its YAML,
// see New) is restarted from the spec its record keeps, as it was
// started; its dependencies are not started.
func (s *Supervisor) Restart(ctx context.Context, names []string, opts StopOptions) ([]StartResult, error) {
	names = s.expand(names)
	var configured []string
	recorded := map[string]*Process{}
	for _, n := range names {
		if _, ok := s.cfg.Processes[n]; ok {
			configured = append(configured, n)
			continue
		}
		spec, err := s.recordedSpec(n)
		if err != nil {
			return nil, err
		}
		recorded[n] = spec
	}
	if err := s.startable(configured); err != nil {
		return nil, err
	}
	if _, err := s.Stop(ctx, names, opts); err != nil {
		return nil, err
	}
	results, err := s.Start(ctx, configured)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, n := range names {
		if spec := recorded[n]; spec != nil {
			res, err := s.startOne(ctx, spec, nil)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			results = append(results, res)
		}
	}
	return results, errors.Join(errs...)
}

// recordedSpec is the spec name's record keeps, for a restart without it
// in the YAML.
func (s *Supervisor) recordedSpec(name string) (*Process, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	rec, err := s.home.ReadRecord(name)
	if err != nil {
		return nil, err
	}
	if rec == nil || len(rec.Spec) == 0 {
		return nil, s.notConfigured(name)
	}
	var spec Process
	if err := json.Unmarshal(rec.Spec, &spec); err != nil || spec.Name != name || spec.Command == "" {
		return nil, fmt.Errorf("%w: the spec in the record of %s cannot be used: %w", ErrCorrupt, name, err)
	}
	return &spec, nil
}
