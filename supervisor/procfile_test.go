package supervisor

import (
	"strings"
	"testing"
)

func TestProcfile_ErrorsNameFileAndLine(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{"web: a\nthis is not a line\n", `Procfile:2: "this is not a line" is not "name: command"`},
		{"web: a\n\nweb: b\n", "Procfile:3: processes.web: declared twice"},
		{"# nothing\n", "Procfile: no process"},
	} {
		_, err := ParseConfig("Procfile", []byte(tc.data), func(string) (string, bool) { return "", false })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.data, err, tc.want)
		}
	}
}
