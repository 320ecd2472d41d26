package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/httpapi"
	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
)

// benchDB is an engine without fsync holding key:0 .. key:999, each with
// the 100-byte value it returns; it is closed when the benchmark ends.
func benchDB(b *testing.B) (*kvstore.DB, []byte) {
	b.Helper()
	db, err := kvstore.Open(b.TempDir(), kvstore.Options{Sync: kvstore.SyncNone, Logger: servertest.Logger(b)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	value := []byte(strings.Repeat("v", 100))
	for i := range 1000 {
		if err := db.Set([]byte("key:"+strconv.Itoa(i)), value); err != nil {
			b.Fatal(err)
		}
	}
	return db, value
}

// BenchmarkFrontLatency is the latency the HTTP front adds: the same GET and
// PUT as an in-process engine call and over HTTP on loopback (keep-alive),
// with p50 and p99 reported for each.
func BenchmarkFrontLatency(b *testing.B) {
	db, value := benchDB(b)
	srv := httptest.NewServer(httpapi.New(db, httpapi.Options{Logger: servertest.Logger(b)}))
	defer srv.Close()
	client := srv.Client()

	ops := map[string]func(i int) error{
		"GET/engine": func(i int) error { _, err := db.Get([]byte("key:" + strconv.Itoa(i%1000))); return err },
		"PUT/engine": func(i int) error { return db.Set([]byte("key:"+strconv.Itoa(i%1000)), value) },
		"GET/http": func(i int) error {
			resp, err := client.Get(srv.URL + "/keys/key:" + strconv.Itoa(i%1000))
			if err != nil {
				return err
			}
			io.Copy(io.Discard, resp.Body)
			return resp.Body.Close()
		},
		"PUT/http": func(i int) error {
			req, _ := http.NewRequest(http.MethodPut, srv.URL+"/keys/key:"+strconv.Itoa(i%1000), strings.NewReader(string(value)))
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			io.Copy(io.Discard, resp.Body)
			return resp.Body.Close()
		},
	}
	for _, name := range []string{"GET/engine", "GET/http", "PUT/engine", "PUT/http"} {
		op := ops[name]
		b.Run(name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if err := op(i); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
		})
	}
}

// BenchmarkHTTPGetVsBareHandler compares the p50 latency of GET /keys/{key}
// (100-byte values) with a bare net/http handler that writes a constant
// 100-byte body, on loopback with keep-alive, alternating the two servers
// in rounds so that machine load hits both alike. It reports both p50s and
// their ratio (ours/bare).
func BenchmarkHTTPGetVsBareHandler(b *testing.B) {
	db, value := benchDB(b)
	ours := httptest.NewServer(httpapi.New(db, httpapi.Options{Logger: servertest.Logger(b)}))
	defer ours.Close()
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(value)
	}))
	defer bare.Close()
	get := func(c *http.Client, url string) error {
		resp, err := c.Get(url)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	const rounds = 5
	per := max(b.N/rounds, 200)
	var oursLat, bareLat []time.Duration
	b.ResetTimer()
	for r := range rounds {
		for _, side := range []struct {
			srv *httptest.Server
			lat *[]time.Duration
		}{{ours, &oursLat}, {bare, &bareLat}} {
			c := side.srv.Client()
			for i := range per {
				url := side.srv.URL + "/keys/key:" + strconv.Itoa((r*per+i)%1000)
				t0 := time.Now()
				if err := get(c, url); err != nil {
					b.Fatal(err)
				}
				*side.lat = append(*side.lat, time.Since(t0))
			}
		}
	}
	b.StopTimer()
	p50 := func(l []time.Duration) float64 {
		slices.Sort(l)
		return float64(l[len(l)/2].Nanoseconds())
	}
	o, bb := p50(oursLat), p50(bareLat)
	b.ReportMetric(o, "ours-p50-ns")
	b.ReportMetric(bb, "bare-p50-ns")
	b.ReportMetric(o/bb, "ours/bare")
}
