package version

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil/cmdtest"
)

// TestArgv_Options: what `devkit version`'s flags give its run function.
func TestArgv_Options(t *testing.T) {
	cmdtest.RunTable(t, NewCmdVersion(cmdtest.Factory(nil), nil), []cmdtest.Case{
		{Name: "defaults", Parse: cmdtest.Parse(nil, NewCmdVersion, "version"), Want: Options{}},
		{Name: "--json", Parse: cmdtest.Parse(nil, NewCmdVersion, "version", "--json"), Want: Options{JSON: true}},
		{Name: "takes no args", Parse: cmdtest.Parse(nil, NewCmdVersion, "version", "x"), Code: 2},
		{Name: "unknown flag", Parse: cmdtest.Parse(nil, NewCmdVersion, "version", "--short"), Code: 2, Stderr: "unknown flag"},
	})
}

// TestVersion_TextAndJSON: the text line names the Go version and
// platform; --json is the Info document.
func TestVersion_TextAndJSON(t *testing.T) {
	var out bytes.Buffer
	ios := &cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}
	if err := versionRun(t.Context(), &Options{IO: ios}); err != nil {
		t.Fatal(err)
	}
	info := Current()
	if !strings.HasPrefix(out.String(), "devkit "+info.Version) || !strings.Contains(out.String(), info.Platform) {
		t.Errorf("text %q", out.String())
	}
	out.Reset()
	if err := versionRun(t.Context(), &Options{IO: ios, JSON: true}); err != nil {
		t.Fatal(err)
	}
	var got Info
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.GoVersion != info.GoVersion || got.Platform != info.Platform {
		t.Errorf("--json %q: %+v, %v", out.String(), got, err)
	}
}
