package ratelimit

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkProxy_AddedLatency sends the same requests to an upstream
// directly and through the proxy (memory store, a limit that never denies),
// one at a time over kept-alive connections, and reports the p50 and p99 of
// each and the difference: what the proxy adds.
func BenchmarkProxy_AddedLatency(b *testing.B) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer upstream.Close()
	policyPath := filepath.Join(b.TempDir(), "policy.yaml")
	writePolicyTB(b, policyPath, "1000000000000")
	listen, _ := startProxyTB(b, &ProxyOptions{Store: &StoreOptions{}, Listen: "127.0.0.1:0", Upstream: upstream.URL,
		Policy: policyPath, WatchInterval: time.Hour, Reload: make(chan struct{})})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	measure := func(url string) []time.Duration {
		lat := make([]time.Duration, 0, b.N)
		for i := 0; i < b.N; i++ {
			start := time.Now()
			resp, err := client.Post(url, "", nil)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("status %d", resp.StatusCode)
			}
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		return lat
	}
	b.ReportAllocs()
	b.ResetTimer()
	direct := measure(upstream.URL + "/auth/login")
	proxied := measure("http://" + listen + "/auth/login")
	pct := func(lat []time.Duration, p float64) float64 {
		return float64(lat[min(len(lat)-1, int(float64(len(lat))*p))].Microseconds())
	}
	b.ReportMetric(pct(direct, 0.50), "direct-p50-µs")
	b.ReportMetric(pct(proxied, 0.50), "proxy-p50-µs")
	b.ReportMetric(pct(proxied, 0.50)-pct(direct, 0.50), "added-p50-µs")
	b.ReportMetric(pct(proxied, 0.99)-pct(direct, 0.99), "added-p99-µs")
}
