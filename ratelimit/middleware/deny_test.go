package middleware

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
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
