package cmdtest

import (
	"slices"
	"testing"

	"github.com/devkit-go/devkit/internal/jsonschema"
)

// CheckJSONOutput fails t when a command run with --json printed JSON that
// breaks the house rule (snake_case names; durations as float seconds in
// _seconds fields, never _ns/_ms/_us integers or Go duration strings). The
// packages' run helpers call it on every --json run of every test, so each
// command's JSON is walked wherever a test looks at it.
func CheckJSONOutput(t testing.TB, args []string, stdout string) {
	t.Helper()
	if !slices.Contains(args, "--json") || stdout == "" {
		return
	}
	problems, err := jsonschema.Check([]byte(stdout))
	if err != nil {
		t.Errorf("%v --json printed what is not JSON: %v\n%s", args, err, stdout)
		return
	}
	for _, p := range problems {
		t.Errorf("%v --json breaks the JSON schema rule: %s", args, p)
	}
}
