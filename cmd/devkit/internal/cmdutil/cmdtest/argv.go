// Package cmdtest runs one devkit verb's argv through cobra and returns the
// options its runF received, so the argv → Options tests of every command
// group share one harness. The verb sits under a root built like devkit's
// (same flag-error rule, same exit-code mapping), below its noun when it has
// one, so persistent flags and usage errors (exit 2) behave as in the binary.
package cmdtest

import (
	"bytes"
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
)

// Factory returns a factory whose streams are buffers and whose environment
// is env only; its constructors are the real ones (a runF never calls them).
func Factory(env map[string]string) *cmdutil.Factory {
	f := cmdutil.NewFactory(&cmdutil.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	f.LookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	f.Now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	return f
}

// Result is what one argv run gave.
type Result[T any] struct {
	Opts   *T // what runF received; nil when it was not called
	Code   int
	Stderr string
}

// Run executes "devkit [noun] verb argv..." where noun (nil for a top-level
// verb) builds the noun command without its verbs and newVerb the verb under
// test, whose runF captures the options instead of doing the work.
func Run[T any](f *cmdutil.Factory, noun func(*cmdutil.Factory) *cobra.Command,
	newVerb func(*cmdutil.Factory, func(context.Context, *T) error) *cobra.Command, argv ...string) Result[T] {
	var res Result[T]
	verb := newVerb(f, func(_ context.Context, o *T) error { res.Opts = o; return nil })
	root := &cobra.Command{Use: "devkit", SilenceUsage: true, SilenceErrors: true}
	root.SetFlagErrorFunc(cmdutil.FlagErrorFunc)
	root.SetOut(f.IOStreams.Out)
	root.SetErr(f.IOStreams.ErrOut)
	parent := root
	args := argv
	if noun != nil {
		parent = noun(f)
		root.AddCommand(parent)
		args = append([]string{parent.Name()}, argv...)
	}
	parent.AddCommand(verb)
	res.Code = cmdutil.Execute(f.IOStreams, root, args)
	if b, ok := f.IOStreams.ErrOut.(*bytes.Buffer); ok {
		res.Stderr = b.String()
	}
	return res
}

// Plain returns a copy of opts with its dependencies (functions, IO
// streams) zeroed, recursively through struct fields, so that what the
// flags, args and environment gave compares with reflect.DeepEqual.
func Plain[T any](opts T) T {
	v := reflect.ValueOf(&opts).Elem()
	zeroDeps(v)
	return opts
}

var ioStreamsType = reflect.TypeFor[*cmdutil.IOStreams]()

func zeroDeps(v reflect.Value) {
	for i := range v.NumField() {
		fv := v.Field(i)
		if !fv.CanSet() {
			continue
		}
		switch {
		case fv.Kind() == reflect.Func, fv.Type() == ioStreamsType:
			fv.SetZero()
		case fv.Kind() == reflect.Struct:
			zeroDeps(fv)
		case fv.Kind() == reflect.Pointer && fv.Type().Elem().Kind() == reflect.Struct && !fv.IsNil():
			cp := reflect.New(fv.Type().Elem())
			cp.Elem().Set(fv.Elem())
			zeroDeps(cp.Elem())
			fv.Set(cp)
		}
	}
}

// Wired reports the dependency fields of opts (functions, IO streams) that
// are nil, by name, recursively: a verb must hand every one to its run.
func Wired[T any](opts *T) (missing []string) {
	var walk func(prefix string, v reflect.Value)
	walk = func(prefix string, v reflect.Value) {
		for i := range v.NumField() {
			fv, name := v.Field(i), prefix+v.Type().Field(i).Name
			if !v.Type().Field(i).IsExported() {
				continue
			}
			switch {
			case fv.Kind() == reflect.Func, fv.Type() == ioStreamsType:
				if fv.IsNil() {
					missing = append(missing, name)
				}
			case fv.Kind() == reflect.Struct && fv.Type().PkgPath() == v.Type().PkgPath():
				walk(name+".", fv)
			case fv.Kind() == reflect.Pointer && fv.Type().Elem().Kind() == reflect.Struct &&
				fv.Type().Elem().PkgPath() == v.Type().PkgPath() && !fv.IsNil():
				walk(name+".", fv.Elem())
			}
		}
	}
	walk("", reflect.ValueOf(opts).Elem())
	return missing
}

// Parsed is one argv run with the options made plain (see Plain).
type Parsed struct {
	Opts    any // Plain(*opts), nil when runF was not called
	Code    int
	Stderr  string
	Missing []string // dependency fields runF received nil (see Wired)
	Verb    string   // the name of the verb run
}

// Parse returns the run of argv through newVerb (under noun) for a table.
func Parse[T any](noun func(*cmdutil.Factory) *cobra.Command,
	newVerb func(*cmdutil.Factory, func(context.Context, *T) error) *cobra.Command, argv ...string) func(*cmdutil.Factory) Parsed {
	return func(f *cmdutil.Factory) Parsed {
		r := Run(f, noun, newVerb, argv...)
		p := Parsed{Code: r.Code, Stderr: r.Stderr, Verb: newVerb(f, nil).Name()}
		if r.Opts != nil {
			p.Opts, p.Missing = Plain(*r.Opts), Wired(r.Opts)
		}
		return p
	}
}

// Case is one argv → Options expectation.
type Case struct {
	Name  string
	Env   map[string]string
	Parse func(*cmdutil.Factory) Parsed
	// Want is the plain options runF must receive when Code is 0.
	Want any
	Code int
	// Stderr, when set, must appear in what the run printed.
	Stderr string
	// Unwired names the optional dependencies the command leaves nil.
	Unwired []string
}

// RunTable runs every case as a subtest: the exit code, the options (when
// the command line is valid: every dependency wired, the rest equal to
// Want) and the diagnostic. With tree (a noun and its verbs, as the binary
// builds it), every runnable command in it must have a case that runs it.
func RunTable(t *testing.T, tree *cobra.Command, cases []Case) {
	t.Helper()
	covered := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			got := tc.Parse(Factory(tc.Env))
			covered[got.Verb] = covered[got.Verb] || got.Code == cmdutil.ExitOK
			if got.Code != tc.Code {
				t.Fatalf("exit %d, want %d (stderr %q)", got.Code, tc.Code, got.Stderr)
			}
			if tc.Stderr != "" && !strings.Contains(got.Stderr, tc.Stderr) {
				t.Errorf("stderr %q does not say %q", got.Stderr, tc.Stderr)
			}
			if tc.Code != cmdutil.ExitOK {
				if got.Opts != nil {
					t.Errorf("a usage error still ran the command with %+v", got.Opts)
				}
				return
			}
			if !slices.Equal(got.Missing, tc.Unwired) {
				t.Errorf("dependencies left nil: %v, want %v", got.Missing, tc.Unwired)
			}
			if !reflect.DeepEqual(got.Opts, tc.Want) {
				t.Errorf("options\n got %+v\nwant %+v", got.Opts, tc.Want)
			}
		})
	}
	if tree != nil {
		for _, name := range runnable(tree) {
			if !covered[name] {
				t.Errorf("%s has no argv case that runs it", name)
			}
		}
	}
}

// runnable lists the names of the runnable commands under c (c included).
func runnable(c *cobra.Command) []string {
	var names []string
	if c.Runnable() {
		names = append(names, c.Name())
	}
	for _, sub := range c.Commands() {
		names = append(names, runnable(sub)...)
	}
	return names
}
