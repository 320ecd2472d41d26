package ratelimit_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/memory"
)

// benchLimits never deny and keep state for an hour: the warm path.
func benchLimits() []ratelimit.Limit {
	return []ratelimit.Limit{{Name: "bench", Rate: 1 << 50, Period: time.Hour}}
}

// benchKeys are the identities the benchmarks spread over.
func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i)
	}
	return keys
}

// reportCPU reports the process's CPU time per operation since cpu0: on a
// machine whose load comes and goes, a steadier figure than ns/op.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

func BenchmarkMemory_Serial(b *testing.B) {
	l := ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{})
	keys := benchKeys(10_000)
	limits := benchLimits()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b, cpuTime())
	var res ratelimit.Result
	req := ratelimit.Request{Limits: limits}
	for i := 0; i < b.N; i++ {
		req.Key = keys[i%len(keys)]
		if err := l.CheckInto(ctx, &req, &res); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMemory_Parallel(b *testing.B) {
	l := ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{})
	keys := benchKeys(10_000)
	limits := benchLimits()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b, cpuTime())
	b.RunParallel(func(pb *testing.PB) {
		var res ratelimit.Result
		req := ratelimit.Request{Limits: limits}
		i := 0
		for pb.Next() {
			i++
			req.Key = keys[i%len(keys)]
			if err := l.CheckInto(ctx, &req, &res); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkMemoryStore_Parallel measures the store alone, without the
// limiter's bookkeeping (stats, budget context, result slice).
func BenchmarkMemoryStore_Parallel(b *testing.B) {
	s := memory.New(memory.Options{})
	keys := benchKeys(10_000)
	limits := benchLimits()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b, cpuTime())
	b.RunParallel(func(pb *testing.PB) {
		out := make([]ratelimit.LimitResult, 1)
		req := ratelimit.CheckRequest{Limits: limits, Cost: 1}
		i := 0
		for pb.Next() {
			i++
			req.Key = keys[i%len(keys)]
			if err := s.Check(ctx, req, out); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkMemoryStore_Serial is the store alone on one goroutine.
func BenchmarkMemoryStore_Serial(b *testing.B) {
	s := memory.New(memory.Options{})
	keys := benchKeys(10_000)
	ctx := context.Background()
	out := make([]ratelimit.LimitResult, 1)
	req := ratelimit.CheckRequest{Limits: benchLimits(), Cost: 1}
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b, cpuTime())
	for i := 0; i < b.N; i++ {
		req.Key = keys[i%len(keys)]
		if err := s.Check(ctx, req, out); err != nil {
			b.Fatal(err)
		}
	}
}
