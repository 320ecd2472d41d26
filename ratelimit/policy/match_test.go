package policy

import (
	"math/rand/v2"
	"testing"
)

func TestNormalizePath(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/auth/login", "/auth/login"}, {"/AUTH/Login", "/auth/login"}, {"/auth//login", "/auth/login"},
		{"/auth/login/", "/auth/login"}, {"/auth/./login", "/auth/login"}, {"/x/../auth/login", "/auth/login"},
		{"/../../auth/login", "/auth/login"}, {"/auth/login;jsessionid=1", "/auth/login"}, {"/auth;a=b/login", "/auth/login"},
		{"/auth/%6Cogin", "/auth/login"}, {"/auth/%6cogin", "/auth/login"}, {"/auth/%2e%2e/x", "/x"},
		{"/a%2fb", "/a%2fb"}, {"/a%2Fb", "/a%2fb"}, {"/a%zz", "/a%zz"}, {"/a%", "/a%"}, {"", "/"}, {"/", "/"}, {"//", "/"},
	} {
		if got := NormalizePath(c.in, false); got != c.want {
			t.Errorf("NormalizePath(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := NormalizePath("/Auth/Login/", true); got != "/Auth/Login" {
		t.Errorf("case-sensitive: %q", got)
	}
}

// The no-allocation fast path never disagrees with the full normalization.
func TestNormalizePath_FastPathAgrees(t *testing.T) {
	alphabet := []byte("/aZ.;%2e~")
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		b := make([]byte, 1+r.IntN(10))
		for j := range b {
			b[j] = alphabet[r.IntN(len(alphabet))]
		}
		p := "/" + string(b)
		for _, cs := range []bool{false, true} {
			if isNormal(p, cs) && NormalizePath(p+"/", cs) != p {
				t.Fatalf("%q (case-sensitive %v): fast path says normal, full gives %q", p, cs, NormalizePath(p+"/", cs))
			}
		}
	}
}
