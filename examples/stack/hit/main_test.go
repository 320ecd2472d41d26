package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRun_CountsAndExpectations(t *testing.T) {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		if n > 3 {
			w.Header().Set("Retry-After", "60")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Method", r.Method)
		_, _ = w.Write(b)
	}))
	defer srv.Close()

	var out bytes.Buffer
	if err := run(context.Background(), &out, options{data: "v", n: 5, expect: "200=3,429=2", url: srv.URL + "/k"}); err != nil {
		t.Fatalf("5 requests, 3 allowed: %v", err)
	}
	if got := out.String(); got != "PUT /k ×5 → 200×3 429×2\n" {
		t.Fatalf("output %q", got)
	}
	if err := run(context.Background(), io.Discard, options{n: 1, expect: "200", url: srv.URL}); err == nil ||
		!strings.Contains(err.Error(), "got 429×1, expected 200×1") {
		t.Fatalf("a 429 where 200 is expected: err = %v", err)
	}
	if err := run(context.Background(), io.Discard, options{n: 1, has: headerList{"Retry-After: 30"}, url: srv.URL}); err == nil {
		t.Fatal("a wrong Retry-After passed -has")
	}
	n = 0
	if err := run(context.Background(), io.Discard, options{data: "abc", n: 1, body: "abd", url: srv.URL}); err == nil {
		t.Fatal("a wrong body passed -body")
	}
}
