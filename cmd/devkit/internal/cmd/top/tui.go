package top

import (
	"context"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/cmd/devkit/internal/live"
)

// runTUI is the interactive view.
func runTUI(ctx context.Context, opts *Options, src live.Sources, sampler *live.Sampler) error {
	return cmdutil.UsageErrorf("the interactive view is not built yet: use --once")
}
