package top

import (
	"context"
	"fmt"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/devkit-go/devkit/cmd/devkit/internal/live"
)

// runTUI runs the interactive view until q, Ctrl-C or SIGTERM. Bubble Tea
// puts the terminal back as it found it on every one of these, and on a
// panic too (it recovers, restores, then reports it).
func runTUI(ctx context.Context, opts *Options, src live.Sources, sampler *live.Sampler) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	follow := func(ctx context.Context, name string) *live.LogTail {
		return live.FollowLog(ctx, src.Sup, name, logLines)
	}
	var act actor = src.Sup
	if opts.ReadOnly {
		act = nil
	}
	m := newModel(ctx, opts, sampler.Sample, act, follow)
	p := tea.NewProgram(m, tea.WithAltScreen(), tea.WithContext(ctx),
		tea.WithInput(opts.IO.In), tea.WithOutput(opts.IO.Out))
	if _, err := p.Run(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("top: %w", err)
	}
	return nil
}
