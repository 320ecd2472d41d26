package middleware

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/devkit-go/devkit/internal/jsonschema"
)

func TestProblemJSON_SameAsEncodingJSON(t *testing.T) {
	secs := int64(3600)
	for _, p := range []Problem{
		{Type: "t", Title: "Too Many Requests", Status: 429, Detail: `Limit "x" <b>&</b>` + "\n\t\x01 é \u2028 \xff", Instance: "/a?b=<c>",
			Rule: "r", Policy: "p", Limit: 5, WindowSeconds: 900, RetryAfterSeconds: &secs, Blocked: true},
		{Type: "about:blank", Title: "Bad Gateway", Status: 502, Detail: "d"},
		// Windows as encoding/json formats floats: fractions, tiny and huge.
		{Type: "t", Title: "x", Status: 429, Detail: "d", WindowSeconds: 0.25},
		{Type: "t", Title: "x", Status: 429, Detail: "d", WindowSeconds: 1e-7},
		{Type: "t", Title: "x", Status: 429, Detail: "d", WindowSeconds: 3.5e21},
	} {
		want, _ := json.Marshal(p)
		// Go before 1.27 escaped the replacement character: the same JSON.
		want = bytes.ReplaceAll(want, []byte(`\ufffd`), []byte("\uFFFD"))
		if problems, err := jsonschema.Check(want); err != nil || len(problems) > 0 {
			t.Errorf("%s breaks the JSON schema rule: %q %v", want, problems, err)
		}
		if got := string(appendProblem(nil, &p)); got != string(want)+"\n" {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
}
