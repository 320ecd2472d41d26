package sup

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/cmd/devkit/internal/importer"
)

// ImportOptions are the inputs of `devkit sup import`.
type ImportOptions struct {
	IO      *cmdutil.IOStreams
	Format  string // supervisord or process-compose
	File    string
	OutFile string
}

// importFormats maps each format `sup import` reads to its converter.
var importFormats = map[string]func(string, []byte) (*importer.Result, error){
	"supervisord":     importer.Supervisord,
	"process-compose": importer.ProcessCompose,
}

// NewCmdImport builds `devkit sup import`.
func NewCmdImport(f *cmdutil.Factory, runF func(context.Context, *ImportOptions) error) *cobra.Command {
	opts := &ImportOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use: "import supervisord|process-compose FILE [-o FILE]",
		Example: `  devkit sup import supervisord /etc/supervisor/supervisord.conf -o ops.yaml
  devkit sup import process-compose process-compose.yaml > ops.yaml`,
		Short: "Convert a supervisord or process-compose configuration into an ops.yaml",
		Long: `Convert another process manager's configuration into an ops.yaml: each
supervisord [program:x], or each process-compose process, becomes a process
with its command, directory, environment, restart policy, stop signal and
timeout, log file, dependencies and ready probe. Whatever has no exact
equivalent (a daemon's own settings, users, priorities, several copies of a
program, probe thresholds...) is printed on stderr as a warning naming the
file, the section or process and the field; nothing is dropped silently.
The ops.yaml goes to stdout, or to the file -o names. See docs/migrate.md.`,
		Args:      cmdutil.ExactArgs(2),
		ValidArgs: []string{"supervisord", "process-compose"},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Format, opts.File = args[0], args[1]
			if _, ok := importFormats[opts.Format]; !ok {
				return cmdutil.ArgsError(cmd, fmt.Errorf("unknown format %q (want supervisord or process-compose)", opts.Format))
			}
			return runVerb(cmd.Context(), runF, importRun, opts)
		},
	}
	cmd.Flags().StringVarP(&opts.OutFile, "out", "o", "", "file to write the ops.yaml to (default: stdout)")
	return cmd
}

func importRun(_ context.Context, opts *ImportOptions) error {
	data, err := os.ReadFile(opts.File)
	if err != nil {
		return err
	}
	res, err := importFormats[opts.Format](opts.File, data)
	if err != nil {
		return err
	}
	for _, w := range res.Warnings {
		fmt.Fprintln(opts.IO.ErrOut, "warning:", w)
	}
	if opts.OutFile == "" {
		_, err = opts.IO.Out.Write(res.YAML)
		return err
	}
	if err := os.WriteFile(opts.OutFile, res.YAML, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "wrote %s (%d warning(s))\n", opts.OutFile, len(res.Warnings))
	return nil
}
