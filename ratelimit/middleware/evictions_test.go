package middleware_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/memory"
	"github.com/devkit-go/devkit/ratelimit/middleware"
)

// What a bounded store evicts is reported: on /metrics by kind and in
// /health, so an operator sees a flood pushing limits out of memory.
func TestAdmin_StoreEvictionsReported(t *testing.T) {
	store := memory.New(memory.Options{MaxKeys: 64})
	l := ratelimit.New(store, ratelimit.Options{})
	lim := ratelimit.Limit{Name: "api", Rate: 10, Period: time.Hour}
	for i := 0; i < 500; i++ {
		if _, err := l.Check(context.Background(), ratelimit.Request{Key: fmt.Sprintf("k%d", i), Limits: []ratelimit.Limit{lim}}); err != nil {
			t.Fatal(err)
		}
	}
	want := store.Evictions()
	if want.Counters == 0 {
		t.Fatal("500 identities in a store of 64 evicted nothing")
	}
	srv := httptest.NewServer(middleware.NewAdmin(l, middleware.AdminOptions{}))
	defer srv.Close()
	get := func(path string) []byte {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return b
	}
	var h middleware.Health
	if err := json.Unmarshal(get("/health"), &h); err != nil {
		t.Fatal(err)
	}
	if h.Evictions == nil || *h.Evictions != want {
		t.Errorf("/health evictions %+v, want %+v", h.Evictions, want)
	}
	metrics := string(get("/metrics"))
	if line := fmt.Sprintf(`ratelimit_store_evictions_total{kind="counter"} %d`, want.Counters); !strings.Contains(metrics, line) ||
		!strings.Contains(metrics, `ratelimit_store_evictions_total{kind="block"} 0`) {
		t.Errorf("/metrics lacks %q and the block count:\n%s", line, metrics)
	}
}
