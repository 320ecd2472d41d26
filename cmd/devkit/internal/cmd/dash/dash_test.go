package dash

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/devkit-go/devkit/cmd/devkit/internal/live"
)

func TestCheckListen_ANonLoopbackAddressNeedsAToken(t *testing.T) {
	for _, c := range []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:7070", "", true}, {"[::1]:7070", "", true}, {"localhost:7070", "", true},
		{"0.0.0.0:7070", "", false}, {":7070", "", false}, {"192.0.2.1:7070", "", false},
		{"0.0.0.0:7070", "s3cret", true}, {"nonsense", "", false},
	} {
		if err := checkListen(c.addr, c.token); (err == nil) != c.ok {
			t.Errorf("checkListen(%q, %q) = %v, want ok %v", c.addr, c.token, err, c.ok)
		}
	}
}

func TestHandler_TokenByQueryThenCookie(t *testing.T) {
	h, err := newHandler(t.Context(), live.Sources{}, time.Second, "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string, mod func(*http.Request)) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", path, nil)
		if mod != nil {
			mod(r)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := get("/snapshot", nil); w.Code != http.StatusUnauthorized {
		t.Fatalf("without a token: %d", w.Code)
	}
	if w := get("/?token=wrong", nil); w.Code != http.StatusUnauthorized || len(w.Result().Cookies()) != 0 {
		t.Fatalf("a wrong token: %d, cookies %v", w.Code, w.Result().Cookies())
	}
	w := get("/?token=s3cret", nil)
	cookies := w.Result().Cookies()
	if w.Code != http.StatusOK || len(cookies) != 1 || !cookies[0].HttpOnly {
		t.Fatalf("the right token: %d, cookies %v", w.Code, cookies)
	}
	if w := get("/snapshot", func(r *http.Request) { r.AddCookie(cookies[0]) }); w.Code != http.StatusOK {
		t.Fatalf("with the cookie: %d", w.Code)
	}
	if w := get("/snapshot", func(r *http.Request) { r.Header.Set("Authorization", "Bearer s3cret") }); w.Code != http.StatusOK {
		t.Fatalf("with the bearer header: %d", w.Code)
	}
	if w := get("/logs?name=../x", func(r *http.Request) { r.Header.Set("Authorization", "Bearer s3cret") }); w.Code != http.StatusBadRequest {
		t.Fatalf("a hostile process name: %d, want 400", w.Code)
	}
}
