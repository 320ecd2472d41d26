package middleware

import (
	"encoding/json"
	"testing"
)

func TestProblemJSON_SameAsEncodingJSON(t *testing.T) {
	secs := int64(3600)
	for _, p := range []Problem{
		{Type: "t", Title: "Too Many Requests", Status: 429, Detail: `Limit "x" <b>&</b>` + "\n\t\x01 é \u2028 \xff", Instance: "/a?b=<c>",
			Rule: "r", Policy: "p", Limit: 5, Window: "15m0s", RetryAfter: &secs, Blocked: true},
		{Type: "about:blank", Title: "Bad Gateway", Status: 502, Detail: "d"},
	} {
		want, _ := json.Marshal(p)
		if got := string(appendProblem(nil, &p)); got != string(want)+"\n" {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
}
