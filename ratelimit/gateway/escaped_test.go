package gateway_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit/gateway"
)

// decodingUpstream routes as many frameworks do: on the decoded path,
// cleaned, so "/free/..%2flimited" is its /limited. It keeps the routes
// it served and the raw paths it was sent.
type decodingUpstream struct {
	mu     sync.Mutex
	served []string
}

func (u *decodingUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	route := path.Clean(strings.ReplaceAll(r.URL.Path, `\`, "/"))
	u.mu.Lock()
	u.served = append(u.served, route+" <- "+r.URL.EscapedPath())
	u.mu.Unlock()
}

func (u *decodingUpstream) since(n int) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.served[n:]...)
}

const freeAndLimitedPolicy = `
rules:
  - {name: limited, paths: [/limited], key: [ip], limits: [{limit: 1, window: 1h}]}
  - {name: free, paths: [/free], key: [ip], limits: [{limit: 1000000, window: 1h}]}
`

// An encoded slash or backslash in the path is refused by default (400),
// decoded before matching with escaped_slashes: unescape (and the decoded
// path forwarded), kept as sent with keep. Whatever the mode, an upstream
// that decodes never serves /limited for a request the limit keyed as
// /free unless the policy kept the path as sent: "/free/..%2flimited"
// was limited as /free and served as /limited.
func TestGateway_EncodedSlashNeverKeyedAsOneRouteAndServedAsAnother(t *testing.T) {
	attacks := []string{"/free/..%2flimited", "/free/..%2Flimited", "/free/..%5climited", "/free/..%5Climited", "/free%2f..%2flimited"}
	for _, c := range []struct {
		mode   string
		status int // of each attack once /limited is spent
	}{{"", 400}, {"reject", 400}, {"unescape", 429}, {"keep", 200}} {
		t.Run("mode "+c.mode, func(t *testing.T) {
			pol := freeAndLimitedPolicy
			if c.mode != "" {
				pol = "defaults: {escaped_slashes: " + c.mode + "}\n" + pol
			}
			up := &decodingUpstream{}
			upstream := httptest.NewServer(up)
			t.Cleanup(upstream.Close)
			srv := startGateway(t, upstream.URL, pol, gateway.Config{Logger: discardLogger()})
			spend := "GET /limited HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
			if got, _ := rawExchange(t, srv.Addr(), "", spend, 3*time.Second); !strings.HasPrefix(got, "HTTP/1.1 200 ") {
				t.Fatalf("spending /limited: %.40q", got)
			}
			for _, target := range attacks {
				n := len(up.since(0))
				got, _ := rawExchange(t, srv.Addr(), "", "GET "+target+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 3*time.Second)
				if !strings.HasPrefix(got, fmt.Sprintf("HTTP/1.1 %d ", c.status)) {
					t.Errorf("%s: answered %.60q, want %d", target, got, c.status)
				}
				served := up.since(n)
				if c.mode != "keep" && len(served) != 0 {
					t.Errorf("%s: the upstream served %q", target, served)
				}
			}
			// A decoded path goes upstream as matched.
			if c.mode == "unescape" {
				n := len(up.since(0))
				got, _ := rawExchange(t, srv.Addr(), "", "GET /free/a%2Fb HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 3*time.Second)
				if served := up.since(n); !strings.HasPrefix(got, "HTTP/1.1 200 ") || len(served) != 1 || served[0] != "/free/a/b <- /free/a/b" {
					t.Errorf("/free/a%%2Fb: %.40q, the upstream served %q: want 200 and /free/a/b", got, served)
				}
			}
		})
	}
}
