package cmdutil

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/devkit-go/devkit/internal/duration"
)

// DurationFlag is the one duration flag of every devkit command: it takes
// the same grammar as the YAML fields (duration.Parse of the shared internal
// module), so --timeout 1.5 and
// stop_timeout: 1.5 mean the same.
type DurationFlag struct{ D *time.Duration }

var _ pflag.Value = DurationFlag{}

// DurationVar registers a duration flag on fs with a default value.
func DurationVar(fs *pflag.FlagSet, d *time.Duration, name string, value time.Duration, usage string) {
	*d = value
	fs.Var(DurationFlag{d}, name, usage)
}

func (f DurationFlag) String() string {
	if f.D == nil || *f.D == 0 {
		return ""
	}
	return f.D.String()
}

// Set parses s with duration.Parse.
func (f DurationFlag) Set(s string) error {
	d, err := duration.Parse(s)
	if err != nil {
		return err
	}
	*f.D = d
	return nil
}

// Type names the value in --help.
func (f DurationFlag) Type() string { return "duration" }
