package benchcmp

import (
	"context"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/ulule/limiter/v3"
	ulredis "github.com/ulule/limiter/v3/drivers/store/redis"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/redisstore"
	"github.com/devkit-go/devkit/ratelimit/redistest"
)

const keyCount = 10_000

// allowFunc is one library's "check one request for key".
type allowFunc func(ctx context.Context, key string) (bool, error)

func libraries(b *testing.B, client *redis.Client) map[string]allowFunc {
	// devkit is measured as a library user calls it: the default limiter
	// (ratelimit.New(store, ratelimit.Options{}): validation, the latency
	// budget's deadline, the node's circuit breaker, statistics) over the
	// default store (redisstore.Options{}, which batches concurrent
	// checks); "unbatched" is the store option that sends each check alone.
	// Each library and each algorithm has keys of its own: an identity
	// that held both a GCRA and a fixed-window limit of the same name would
	// carry two limits' state (as the peers' keys never do).
	// The limiter's only non-default option is a budget of a second
	// instead of 50 ms: on this shared machine, 50 goroutines now and then
	// wait longer than 50 ms for a turn, and a check decided by the failure
	// policy must not count as served (nor fail the run). The budget is a
	// deadline either way; its length costs nothing.
	limiterOver := func(opts redisstore.Options) *ratelimit.Limiter {
		return ratelimit.New(redisstore.New(client, opts), ratelimit.Options{Budget: time.Second})
	}
	devkit := limiterOver(redisstore.Options{Prefix: "dk:"})
	devkitFixed := limiterOver(redisstore.Options{Prefix: "dkf:"})
	unbatched := limiterOver(redisstore.Options{Prefix: "dku:", Pipeline: -1})
	unbatchedFixed := limiterOver(redisstore.Options{Prefix: "dkuf:", Pipeline: -1})
	gcra := ratelimit.Limit{Name: "api", Algorithm: ratelimit.GCRA, Rate: 1 << 30, Period: time.Minute}
	fixed := ratelimit.Limit{Name: "api", Algorithm: ratelimit.FixedWindow, Rate: 1 << 30, Period: time.Minute}
	devkitAllow := func(l *ratelimit.Limiter, lim ratelimit.Limit) allowFunc {
		return func(ctx context.Context, key string) (bool, error) {
			r, err := l.Allow(ctx, key, lim)
			if err == nil && r.Err != nil {
				err = r.Err // a store failure decided by the failure policy
			}
			return r.Allowed, err
		}
	}
	rr := redis_rate.NewLimiter(client)
	rrLimit := redis_rate.PerMinute(1 << 30)
	store, err := ulredis.NewStoreWithOptions(client, limiter.StoreOptions{Prefix: "ul"})
	if err != nil {
		b.Fatal(err)
	}
	ul := limiter.New(store, limiter.Rate{Period: time.Minute, Limit: 1 << 30})
	return map[string]allowFunc{
		"devkit-gcra":                   devkitAllow(devkit, gcra),
		"devkit-gcra-unbatched":         devkitAllow(unbatched, gcra),
		"devkit-fixed-window":           devkitAllow(devkitFixed, fixed),
		"devkit-fixed-window-unbatched": devkitAllow(unbatchedFixed, fixed),
		"redis_rate-gcra": func(ctx context.Context, key string) (bool, error) {
			res, err := rr.Allow(ctx, key, rrLimit)
			if err != nil {
				return false, err
			}
			return res.Allowed > 0, nil
		},
		"ulule-fixed-window": func(ctx context.Context, key string) (bool, error) {
			c, err := ul.Get(ctx, key)
			return !c.Reached, err
		},
	}
}

var order = []string{"devkit-gcra", "redis_rate-gcra", "devkit-fixed-window", "ulule-fixed-window", "devkit-gcra-unbatched", "devkit-fixed-window-unbatched"}

func benchCompare(b *testing.B, goroutines int) {
	srv := redistest.StartRedis(b)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 64})
	defer client.Close()
	keys := make([]string, keyCount)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i)
	}
	libs := libraries(b, client)
	for _, name := range order {
		allow := libs[name]
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			var next atomic.Int64
			b.SetParallelism(max(1, goroutines/runtime.GOMAXPROCS(0)))
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := allow(ctx, keys[next.Add(1)%keyCount]); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "checks/s")
		})
	}
}

// BenchmarkCompare_2 runs GOMAXPROCS (2 here) goroutines per library,
// BenchmarkCompare_50 runs 50, all against the same redis-server in the
// same run.
func BenchmarkCompare_2(b *testing.B)  { benchCompare(b, 1) }
func BenchmarkCompare_50(b *testing.B) { benchCompare(b, 50) }

// BenchmarkCompareInterleaved takes turns: each iteration runs every library
// for the same short slice of time with 50 goroutines, so that a machine
// whose load drifts during the run treats them alike. It reports each
// library's checks/s and its ratio to redis_rate.
//
//	go test -run '^$' -bench Interleaved -benchtime=5x
func BenchmarkCompareInterleaved(b *testing.B) {
	const (
		goroutines = 50
		slice      = 250 * time.Millisecond
	)
	srv := redistest.StartRedis(b)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 64})
	defer client.Close()
	keys := make([]string, keyCount)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i)
	}
	libs := libraries(b, client)
	counts := map[string]int64{}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, name := range order {
			allow := libs[name]
			var done, next atomic.Int64
			deadline := time.Now().Add(slice)
			errs := make(chan error, goroutines)
			for g := 0; g < goroutines; g++ {
				go func() {
					var err error
					for time.Now().Before(deadline) {
						if _, err = allow(ctx, keys[next.Add(1)%keyCount]); err != nil {
							break
						}
						done.Add(1)
					}
					errs <- err
				}()
			}
			for g := 0; g < goroutines; g++ {
				if err := <-errs; err != nil {
					b.Fatalf("%s: %v", name, err)
				}
			}
			counts[name] += done.Load()
		}
	}
	total := time.Duration(b.N) * slice
	base := float64(counts["redis_rate-gcra"])
	for _, name := range order {
		b.ReportMetric(float64(counts[name])/total.Seconds(), name+"/s")
		b.ReportMetric(float64(counts[name])/base, name+"/redis_rate")
	}
	b.ReportMetric(float64(counts["devkit-fixed-window"])/float64(counts["ulule-fixed-window"]), "devkit-fixed-window/ulule")
}

// BenchmarkCompareMedians takes turns like BenchmarkCompareInterleaved
// and reports, per library, the median over pairs of rounds of its
// throughput relative to its peer in the same rounds (devkit-gcra to
// redis_rate, devkit-fixed-window to ulule), at 50 goroutines and at 1
// (low load: the batching default must not cost latency there), the two
// of a pair run in alternating order and each pair of rounds holding one
// of each. It also reports each library's CPU per check, median
// over its turns: this process's (the client library, getrusage) and the
// redis-server's (INFO cpu), in µs.
//
//	go test -run '^$' -bench Medians -benchtime=9x
func BenchmarkCompareMedians(b *testing.B) {
	for _, goroutines := range []int{50, 1} {
		b.Run(strconv.Itoa(goroutines)+"goroutines", func(b *testing.B) {
			srv := redistest.StartRedis(b)
			client := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 64})
			defer client.Close()
			keys := make([]string, keyCount)
			for i := range keys {
				keys[i] = "user:" + strconv.Itoa(i)
			}
			libs := libraries(b, client)
			ctx := context.Background()
			clientCPU, serverCPU := map[string][]float64{}, map[string][]float64{}
			run := func(name string, slice time.Duration) float64 {
				allow := libs[name]
				var done, next atomic.Int64
				c0, s0 := processCPU(), serverCPUOf(b, client)
				deadline := time.Now().Add(slice)
				var wg sync.WaitGroup
				for g := 0; g < goroutines; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for time.Now().Before(deadline) {
							if _, err := allow(ctx, keys[next.Add(1)%keyCount]); err != nil {
								b.Error(err)
								return
							}
							done.Add(1)
						}
					}()
				}
				wg.Wait()
				n := float64(max(done.Load(), 1))
				clientCPU[name] = append(clientCPU[name], float64((processCPU()-c0).Microseconds())/n)
				serverCPU[name] = append(serverCPU[name], float64((serverCPUOf(b, client)-s0).Microseconds())/n)
				return float64(done.Load()) / slice.Seconds()
			}
			pairs := [][2]string{{"devkit-gcra", "redis_rate-gcra"}, {"devkit-fixed-window", "ulule-fixed-window"},
				{"devkit-gcra-unbatched", "redis_rate-gcra"}, {"devkit-fixed-window-unbatched", "ulule-fixed-window"},
				{"devkit-gcra", "devkit-gcra-unbatched"}}
			ratios := make([][]float64, len(pairs))
			// At least minMedianRounds rounds, whatever b.N: make bench's
			// default -benchtime stops at one 2-second iteration, and a
			// median of one round on a shared machine says little.
			// Rounds alternate which of a pair goes first, and the first turn
			// may be slower (at one goroutine the default store and the
			// unbatched one, which run the same code there, read 0.68-0.92 in
			// the rounds the default went first, 1.06-1.36 in the others): a
			// ratio is the geometric mean of two rounds, one in each order,
			// and the rounds are even in number.
			b.ResetTimer()
			first := make([]float64, len(pairs))
			rounds := max(b.N, minMedianRounds)
			for i := range rounds + rounds%2 {
				for j, p := range pairs {
					var ours, peer float64
					if i%2 == 0 {
						ours, peer = run(p[0], 200*time.Millisecond), run(p[1], 200*time.Millisecond)
						first[j] = ours / peer
					} else {
						peer, ours = run(p[1], 200*time.Millisecond), run(p[0], 200*time.Millisecond)
						ratios[j] = append(ratios[j], math.Sqrt(first[j]*ours/peer))
					}
				}
			}
			b.StopTimer()
			for j, p := range pairs {
				b.ReportMetric(median(ratios[j]), p[0]+"/"+p[1])
			}
			for _, name := range order {
				if len(clientCPU[name]) > 0 {
					b.ReportMetric(median(clientCPU[name]), name+"-client-µs/check")
					b.ReportMetric(median(serverCPU[name]), name+"-server-µs/check")
				}
			}
		})
	}
}

// minMedianRounds is the fewest rounds BenchmarkCompareMedians takes.
const minMedianRounds = 7

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

// serverCPUOf is the redis-server's CPU time so far (INFO cpu).
func serverCPUOf(b *testing.B, client *redis.Client) time.Duration {
	info, err := client.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatalf("INFO cpu %s: %v", line, err)
			}
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}
