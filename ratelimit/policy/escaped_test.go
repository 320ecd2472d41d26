package policy_test

import (
	"testing"

	"github.com/devkit-go/devkit/ratelimit/policy"
)

// Every spelling of %2F and %5C is found and turned into "/"; other
// escapes are left as they are.
func TestEscapedSlashes_FoundAndUnescaped(t *testing.T) {
	for _, c := range []struct {
		in, out string
		has     bool
	}{
		{"/free/..%2flimited", "/free/../limited", true},
		{"/a%2Fb%5cc%5Cd", "/a/b/c/d", true},
		{"/a%252Fb", "/a%252Fb", false},
		{"/a%2", "/a%2", false},
		{"/a%", "/a%", false},
		{"/caf%C3%A9", "/caf%C3%A9", false},
		{"/x%2F", "/x/", true},
	} {
		if got := policy.HasEscapedSlash(c.in); got != c.has {
			t.Errorf("HasEscapedSlash(%q) = %v", c.in, got)
		}
		if got := policy.UnescapeSlashes(c.in); got != c.out {
			t.Errorf("UnescapeSlashes(%q) = %q, want %q", c.in, got, c.out)
		}
	}
	p, err := policy.Parse("p.yaml", []byte("rules:\n  - {name: a, paths: [/], skip: true}\n"))
	if err != nil || p.EscapedSlashes != policy.EscapedSlashesReject {
		t.Fatalf("default: %v, %v: want reject", p, err)
	}
}
