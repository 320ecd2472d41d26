package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/backend"
	"github.com/devkit-go/devkit/kvstore/server/httpapi"
	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
)

func serve(t *testing.T, store backend.Store, opts httpapi.Options) (*httpapi.Handler, string) {
	t.Helper()
	opts.Logger = servertest.Logger(t)
	h := httpapi.New(store, opts)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv.URL
}

func do(t *testing.T, method, url string, body io.Reader, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// errorCode decodes a JSON error body.
func errorCode(t *testing.T, resp *http.Response, body []byte) string {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error with Content-Type %q, body %q", ct, body)
	}
	var e struct{ Error, Code string }
	if err := json.Unmarshal(body, &e); err != nil || e.Error == "" || e.Code == "" {
		t.Fatalf("error body %q: %v", body, err)
	}
	return e.Code
}

func TestKeys_PutGetHeadDelete(t *testing.T) {
	db := servertest.OpenDB(t)
	_, base := serve(t, db, httpapi.Options{})
	for _, key := range []string{"user:1", "a/b/c", "sp ace", "%", "ünï", "\x00\xff"} {
		u := base + "/keys/" + url.PathEscape(key)
		value := []byte("value of " + key + "\x00\xff")
		resp, body := do(t, http.MethodPut, u, bytes.NewReader(value))
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("PUT %q: %d %s", key, resp.StatusCode, body)
		}
		if got, err := db.Get([]byte(key)); err != nil || !bytes.Equal(got, value) {
			t.Fatalf("engine has %q, %v for %q", got, err, key)
		}
		resp, body = do(t, http.MethodGet, u, nil)
		if resp.StatusCode != http.StatusOK || !bytes.Equal(body, value) {
			t.Fatalf("GET %q: %d %q", key, resp.StatusCode, body)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/octet-stream" {
			t.Fatalf("GET Content-Type %q", ct)
		}
		resp, body = do(t, http.MethodHead, u, nil)
		if resp.StatusCode != http.StatusOK || len(body) != 0 || resp.ContentLength != int64(len(value)) {
			t.Fatalf("HEAD %q: %d, %d body bytes, Content-Length %d", key, resp.StatusCode, len(body), resp.ContentLength)
		}
		resp, body = do(t, http.MethodDelete, u, nil)
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE %q: %d %s", key, resp.StatusCode, body)
		}
		for _, m := range []string{http.MethodGet, http.MethodDelete} {
			resp, body = do(t, m, u, nil)
			if resp.StatusCode != http.StatusNotFound || errorCode(t, resp, body) != backend.CodeNotFound {
				t.Fatalf("%s deleted %q: %d %s", m, key, resp.StatusCode, body)
			}
		}
		if resp, _ = do(t, http.MethodHead, u, nil); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("HEAD deleted %q: %d", key, resp.StatusCode)
		}
	}
	// An unescaped slash is part of the key, as %2F is.
	do(t, http.MethodPut, base+"/keys/dir/file", strings.NewReader("x"))
	if resp, body := do(t, http.MethodGet, base+"/keys/dir%2Ffile", nil); string(body) != "x" {
		t.Fatalf("GET dir%%2Ffile: %d %q", resp.StatusCode, body)
	}
}

func TestKeys_BadRequestsGetPreciseErrors(t *testing.T) {
	db := servertest.OpenDBWith(t, kvstore.Options{Sync: kvstore.SyncNone, MaxKeySize: 16, MaxValueSize: 1024})
	_, base := serve(t, db, httpapi.Options{MaxKeyBytes: 16, MaxValueBytes: 1024})
	for _, tc := range []struct {
		method, path string
		body         string
		status       int
		code         string
		allow        string
	}{
		{"PUT", "/keys/", "v", 400, backend.CodeEmptyKey, ""},
		{"GET", "/keys/", "", 400, backend.CodeEmptyKey, ""},
		{"PUT", "/keys/" + strings.Repeat("k", 17), "v", 400, backend.CodeKeyTooLarge, ""},
		{"PUT", "/keys/k", strings.Repeat("v", 1025), 413, httpapi.CodeBodyTooLarge, ""},
		{"POST", "/keys/k", "v", 405, httpapi.CodeMethodNotAllowed, "GET, HEAD, PUT, DELETE"},
		{"PATCH", "/keys", "", 405, httpapi.CodeMethodNotAllowed, "GET, HEAD"},
		{"POST", "/health", "", 405, httpapi.CodeMethodNotAllowed, "GET, HEAD"},
		{"DELETE", "/metrics", "", 405, httpapi.CodeMethodNotAllowed, "GET, HEAD"},
		{"GET", "/keys?limit=0", "", 400, backend.CodeBadRequest, ""},
		{"GET", "/keys?limit=ten", "", 400, backend.CodeBadRequest, ""},
		{"GET", "/keys?encoding=hex", "", 400, backend.CodeBadRequest, ""},
		{"GET", "/keys?encoding=base64&prefix=!!", "", 400, backend.CodeBadRequest, ""},
		{"GET", "/nope", "", 404, httpapi.CodeNotFoundRoute, ""},
	} {
		resp, body := do(t, tc.method, base+tc.path, strings.NewReader(tc.body))
		if resp.StatusCode != tc.status || errorCode(t, resp, body) != tc.code || resp.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d Allow=%q %s; want %d %s Allow=%q", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Allow"), body, tc.status, tc.code, tc.allow)
		}
	}
	if db.Len() != 0 {
		t.Fatalf("bad requests wrote %d keys", db.Len())
	}
}

// TestPut_TooLargeIsRefusedBeforeTheBodyIsRead sends a header announcing a
// body far over the limit and no body: the server must answer at once.
func TestPut_TooLargeIsRefusedBeforeTheBodyIsRead(t *testing.T) {
	_, base := serve(t, servertest.OpenDB(t), httpapi.Options{MaxValueBytes: 1 << 20})
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "PUT /keys/big HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", 100<<20)
	b := make([]byte, 4096)
	n, err := conn.Read(b)
	if err != nil {
		t.Fatalf("no answer before the body was sent: %v", err)
	}
	if !bytes.HasPrefix(b[:n], []byte("HTTP/1.1 413 ")) || !bytes.Contains(b[:n], []byte(`"code":"value_too_large"`)) {
		t.Fatalf("answer %q", b[:n])
	}
}

func TestPut_ChunkedBodyOverTheLimitIsRefused(t *testing.T) {
	db := servertest.OpenDB(t)
	_, base := serve(t, db, httpapi.Options{MaxValueBytes: 1000})
	// An io.Reader of unknown length is sent chunked, without Content-Length.
	body := io.MultiReader(strings.NewReader(strings.Repeat("x", 600)), strings.NewReader(strings.Repeat("y", 600)))
	resp, b := do(t, http.MethodPut, base+"/keys/k", body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || errorCode(t, resp, b) != httpapi.CodeBodyTooLarge {
		t.Fatalf("chunked oversized PUT: %d %s", resp.StatusCode, b)
	}
	exact := io.MultiReader(strings.NewReader(strings.Repeat("x", 500)), strings.NewReader(strings.Repeat("y", 500)))
	if resp, b := do(t, http.MethodPut, base+"/keys/k", exact); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("chunked PUT at the limit: %d %s", resp.StatusCode, b)
	}
}

func TestListKeys_PagesWithCursor(t *testing.T) {
	db := servertest.OpenDB(t)
	_, base := serve(t, db, httpapi.Options{})
	for i := range 25 {
		db.Set(fmt.Appendf(nil, "user:%02d", i), []byte("x"))
	}
	db.Set([]byte("zzz"), []byte("x"))
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		resp, body := do(t, http.MethodGet, base+"/keys?prefix=user:&limit=10&after="+url.QueryEscape(after), nil)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		var page httpapi.KeysPage
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		got = append(got, page.Keys...)
		if page.Next == nil {
			if pages != 2 {
				t.Fatalf("%d pages, want 3", pages+1)
			}
			break
		}
		after = *page.Next
	}
	if len(got) != 25 || got[0] != "user:00" || got[24] != "user:24" {
		t.Fatalf("keys %v", got)
	}
	// An empty result is an empty list, not null.
	if _, body := do(t, http.MethodGet, base+"/keys?prefix=none", nil); !bytes.Contains(body, []byte(`"keys":[]`)) {
		t.Fatalf("empty page %s", body)
	}
}

func TestListKeys_BinaryKeysNeedBase64(t *testing.T) {
	db := servertest.OpenDB(t)
	_, base := serve(t, db, httpapi.Options{})
	db.Set([]byte("b\xff"), []byte("x"))
	resp, body := do(t, http.MethodGet, base+"/keys", nil)
	if resp.StatusCode != 400 || errorCode(t, resp, body) != "binary_key" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	_, body = do(t, http.MethodGet, base+"/keys?encoding=base64&prefix=Yg==", nil) // "b"
	if !bytes.Contains(body, []byte(`"keys":["Yv8="]`)) {
		t.Fatalf("base64 page %s", body)
	}
}

func TestHealth_OKThenDraining(t *testing.T) {
	h, base := serve(t, servertest.OpenDB(t), httpapi.Options{})
	resp, body := do(t, http.MethodGet, base+"/health", nil)
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"status":"ok"`)) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	h.SetDraining(true)
	resp, body = do(t, http.MethodGet, base+"/health", nil)
	if resp.StatusCode != 503 || !bytes.Contains(body, []byte(`"status":"draining"`)) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}

func TestMetrics_PrometheusTextAndJSON(t *testing.T) {
	db := servertest.OpenDB(t)
	_, base := serve(t, db, httpapi.Options{})
	do(t, http.MethodPut, base+"/keys/a", strings.NewReader("1"))
	do(t, http.MethodGet, base+"/keys/a", nil)
	do(t, http.MethodGet, base+"/keys/missing", nil)

	resp, body := do(t, http.MethodGet, base+"/metrics", nil)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{
		`devkit_kv_requests_total{op="get",transport="http"} 2`,
		`devkit_kv_requests_total{op="set",transport="http"} 1`,
		`devkit_kv_request_errors_total{transport="http"} 1`,
		"devkit_kv_keys 1",
		`devkit_kv_request_duration_seconds_count{op="get",transport="http"} 2`,
		"go_goroutines",
	} {
		if !strings.Contains(string(body), want+"\n") && !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	resp, body = do(t, http.MethodGet, base+"/metrics", nil, "Accept", "text/html, application/json;q=0.9")
	var snap struct {
		Engine     kvstore.Stats
		Transports map[string]struct{ Requests map[string]uint64 }
	}
	if err := json.Unmarshal(body, &snap); err != nil || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("JSON metrics %q: %v", body, err)
	}
	if snap.Engine.Keys != 1 || snap.Engine.Sets != 1 || snap.Transports["http"].Requests["get"] != 2 {
		t.Fatalf("JSON metrics %+v", snap)
	}
}

func TestServeHTTP_PanicBecomes500(t *testing.T) {
	db := servertest.OpenDB(t)
	_, base := serve(t, servertest.PanickyStore{Store: db}, httpapi.Options{})
	resp, body := do(t, http.MethodGet, base+"/keys/"+url.PathEscape(servertest.PanicKey), nil)
	if resp.StatusCode != 500 || errorCode(t, resp, body) != backend.CodeInternal {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if resp, _ := do(t, http.MethodPut, base+"/keys/k", strings.NewReader("v")); resp.StatusCode != 204 {
		t.Fatalf("server did not live on: %d", resp.StatusCode)
	}
}

func TestKeys_BadEscapeIs400(t *testing.T) {
	_, base := serve(t, servertest.OpenDB(t), httpapi.Options{})
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "GET /keys/a%%zz HTTP/1.1\r\nHost: x\r\n\r\n")
	b := make([]byte, 4096)
	n, _ := conn.Read(b)
	if !bytes.HasPrefix(b[:n], []byte("HTTP/1.1 400 ")) {
		t.Fatalf("answer %q", b[:n])
	}
}

// readOnlyStore reports the engine read-only, as after a failed fsync, and
// refuses writes the way the engine then does.
type readOnlyStore struct{ backend.Store }

func (s readOnlyStore) Stats() kvstore.Stats {
	st := s.Store.Stats()
	st.ReadOnly, st.ReadOnlyReason = true, "fdatasync wal: input/output error"
	return st
}

func (s readOnlyStore) Set(key, value []byte) error {
	return fmt.Errorf("%w: fdatasync wal: input/output error", kvstore.ErrReadOnly)
}

func TestHealth_ReadOnlyEngineIs503WithTheReason(t *testing.T) {
	_, base := serve(t, readOnlyStore{servertest.OpenDB(t)}, httpapi.Options{})
	resp, body := do(t, http.MethodGet, base+"/health", nil)
	if resp.StatusCode != 503 || !bytes.Contains(body, []byte(`"status":"read_only"`)) || !bytes.Contains(body, []byte("input/output error")) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	resp, body = do(t, http.MethodPut, base+"/keys/k", strings.NewReader("v"))
	if resp.StatusCode != 503 || errorCode(t, resp, body) != backend.CodeReadOnly {
		t.Fatalf("PUT on a read-only engine: %d %s", resp.StatusCode, body)
	}
}

func TestGet_AKeyHoldingACollectionIsAConflict(t *testing.T) {
	db := servertest.OpenDB(t)
	if _, err := db.HSet([]byte("h"), []byte("f"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	_, url := serve(t, db, httpapi.Options{})
	resp, body := do(t, http.MethodGet, url+"/keys/h", nil)
	if resp.StatusCode != http.StatusConflict || errorCode(t, resp, body) != "wrong_type" {
		t.Fatalf("GET of a hash = %d %s", resp.StatusCode, body)
	}
}
