package top

import (
	"context"
	"fmt"
	"io"
	"os"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/mattn/go-isatty"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/cmd/devkit/internal/live"
)

// renderFPS is how often the renderer looks for a changed frame. Its ticker
// runs whether or not anything changed, and each tick wakes the process: on
// a 2-core VM a bare Go ticker costs 0.6 % of a core at 20 Hz and 0.26 % at
// 10 Hz, a third of an idle view's budget. 10 frames a second still draws a
// key within 100 ms.
const renderFPS = 10

// terminal reports whether s is a terminal.
func terminal(s any) bool {
	f, ok := s.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// needTerminal refuses to draw the view where there is no terminal to
// draw it on (a pipe, a script), pointing at what works there.
func needTerminal(in io.Reader, out io.Writer) error {
	if terminal(in) && terminal(out) {
		return nil
	}
	return cmdutil.UsageErrorf("devkit top needs a terminal: in a script use --once (or --once --json)")
}

// runTUI runs the interactive view until q, Ctrl-C or SIGTERM. Bubble Tea
// puts the terminal back as it found it on every one of these, and on a
// panic too (it recovers, restores, then reports it).
func runTUI(ctx context.Context, opts *Options, src live.Sources, sampler *live.Sampler) error {
	if err := needTerminal(opts.IO.In, opts.IO.Out); err != nil {
		return err
	}
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
		tea.WithInput(opts.IO.In), tea.WithOutput(opts.IO.Out), tea.WithFPS(renderFPS))
	if _, err := p.Run(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("top: %w", err)
	}
	return nil
}
