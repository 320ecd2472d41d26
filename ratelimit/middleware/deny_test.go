package middleware

import (
	"bufio"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/memory"
	"github.com/devkit-go/devkit/ratelimit/policy"
)

// TestDenial_FastPathSameAsGeneral: the pre-rendered single-limit denial
// writes exactly the headers and body of setHeaders + writeDenial, for
// names, rules and paths that need escaping, blocked or not, waits inside
// and outside the small-number table.
func TestDenial_FastPathSameAsGeneral(t *testing.T) {
	limits := []ratelimit.Limit{
		{Name: "login", Rate: 5, Period: 15 * time.Minute, Block: time.Hour},
		{Name: `api "free" <b>&é` + "\u2028", Algorithm: ratelimit.GCRA, Rate: 7, Period: 3 * time.Second, Burst: 3},
		{Name: "tb", Algorithm: ratelimit.TokenBucket, Rate: 100, Period: time.Minute},
	}
	paths := []string{"/auth/login", "", `/a"b<c>&d/é`, "/x\x01y"}
	rules := []string{"login", `r"1`, ""}
	waits := []time.Duration{0, time.Millisecond, 1500 * time.Millisecond, time.Hour, 5 * time.Hour, 48 * time.Hour}
	n := 0
	for _, lim := range limits {
		for _, path := range paths {
			for i, wait := range waits {
				for _, blocked := range []bool{false, true} {
					rule := rules[(n+i)%len(rules)]
					n++
					res := &ratelimit.Result{
						Allowed: false, Limit: lim, Remaining: int64(i) - 1, ResetAfter: wait + time.Duration(i)*time.Second,
						RetryAfter: wait, Blocked: blocked,
						Limits: []ratelimit.LimitResult{{Limit: lim, Remaining: int64(i) - 1, ResetAfter: wait * 2, RetryAfter: wait, Blocked: blocked}},
					}
					if !fastDenial(res) {
						t.Fatalf("%+v: not taken by the fast path", res)
					}
					req := httptest.NewRequest("GET", "/", nil)
					req.URL.Path = path
					var m Middleware
					fields := m.limitFields(res)

					want := httptest.NewRecorder()
					setHeaders(want.Header(), res, fields.policy)
					writeDenial(want, req, res, rule, fields.window)
					got := httptest.NewRecorder()
					writeFastDenial(got, req, res, rule, fields.policy, fields.denied)

					if got.Code != want.Code || got.Body.String() != want.Body.String() || !reflect.DeepEqual(got.Header(), want.Header()) {
						t.Fatalf("limit %q path %q rule %q wait %v blocked %v:\n got %d %v\n%s\nwant %d %v\n%s",
							lim.Name, path, rule, wait, blocked, got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
					}
					raw := &rawRecorder{ResponseRecorder: httptest.NewRecorder()}
					writeFastDenial(raw, req, res, rule, fields.policy, fields.denied)
					if raw.Code != want.Code || raw.Body.String() != want.Body.String() || !reflect.DeepEqual(raw.Header(), want.Header()) {
						t.Fatalf("raw: limit %q path %q rule %q wait %v blocked %v:\n got %d %v\n%s\nwant %d %v\n%s",
							lim.Name, path, rule, wait, blocked, raw.Code, raw.Header(), raw.Body, want.Code, want.Header(), want.Body)
					}
				}
			}
		}
	}
}

// rawRecorder is a RawWriter: it parses the rendered fields as a client
// would and records them with the Content-Length WriteRaw promises.
type rawRecorder struct {
	*httptest.ResponseRecorder
}

func (w *rawRecorder) WriteRaw(status int, fields, body []byte) error {
	tp := textproto.NewReader(bufio.NewReader(strings.NewReader(string(fields) + "\r\n")))
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		return err
	}
	for k, v := range h {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, err = w.Write(body)
	return err
}

var _ RawWriter = (*rawRecorder)(nil)
var _ http.ResponseWriter = (*rawRecorder)(nil)

// reusedWriter is a ResponseWriter whose header map is cleared, not
// remade, between requests: what a test counts is the handler's own.
type reusedWriter struct {
	h    http.Header
	code int
	n    int
}

func (w *reusedWriter) Header() http.Header         { return w.h }
func (w *reusedWriter) WriteHeader(code int)        { w.code = code }
func (w *reusedWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

// TestDenial_Allocations: a denial of the usual kind (one limit, an IPv4
// client, the blocked cache) allocates the counter's key and the header
// values net/http keeps after the handler returns (the values' array and
// the RateLimit field), nothing else: the body is built in a pooled buffer
// and the client's address is taken as RemoteAddr writes it.
func TestDenial_Allocations(t *testing.T) {
	l := ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{BlockedCacheSize: 1000})
	p, err := policy.Parse("test.yaml", []byte("rules:\n  - {name: api, paths: [/], key: [ip], limits: [{limit: 1, window: 1h}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	h := New(l, p, Options{Logger: slog.New(slog.DiscardHandler)}).Handler(ok)
	r := httptest.NewRequest("GET", "/x", nil)
	r.RemoteAddr = "203.0.113.9:4000"
	w := &reusedWriter{h: make(http.Header, 16)}
	h.ServeHTTP(w, r) // the one allowed request
	allocs := testing.AllocsPerRun(1000, func() {
		clear(w.h)
		w.code = 0
		h.ServeHTTP(w, r)
	})
	if w.code != http.StatusTooManyRequests {
		t.Fatalf("status %d, want 429", w.code)
	}
	if allocs > 3 {
		t.Errorf("%v allocations per denial, want at most 3 (the key, the header values)", allocs)
	}
}
