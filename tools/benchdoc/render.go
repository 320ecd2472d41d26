package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// figure is one number of the page: a metric of a benchmark, shown in a
// unit of its own (show) after multiplying by scale.
type figure struct {
	pkg   string // package directory from the repository root, e.g. kvstore/server/resp
	bench string // benchmark name with its sub-benchmarks, without the Benchmark prefix
	unit  string // the metric's unit in the go test output
	show  string // the unit on the page; unit when empty
	scale float64
}

// workload is one row of a module's table.
type workload struct {
	what     string
	devkit   figure
	peerName string // what devkit is measured against; empty for a row without a peer
	peer     figure
	ratio    string // the benchmark's own ratio metric (a median of paired rounds); devkit ÷ peer when empty
}

// module is one table of the page.
type module struct {
	name, dir string // the table's title and the module's directory (where the command runs)
	rows      []workload
}

func fig(pkg, bench, unit string) figure { return figure{pkg: pkg, bench: bench, unit: unit} }

func (f figure) in(show string, scale float64) figure { f.show, f.scale = show, scale; return f }

const (
	kv   = "kvstore"
	resp = "kvstore/server/resp"
	http = "kvstore/server/httpapi"
	rl   = "ratelimit"
	gw   = "ratelimit/gateway"
	rs   = "ratelimit/redisstore"
	cmp  = "ratelimit/benchcmp"
	rls  = "ratelimit/envoyrls"
	sup  = "supervisor"
)

// modules is what the page shows: the workloads a reader deciding on devkit
// asks about, each against the peer or baseline it is measured beside. Every
// other figure is in the raw file.
var modules = []module{
	{name: "kvstore", dir: "kvstore", rows: []workload{
		{what: "durable SET (`always`), 1 writer; goal ≥ 0.8× one fsync", devkit: fig(kv, "SetAlwaysConcurrent/writers=1", "ops/s"),
			peerName: "one 100-byte write + fdatasync", peer: fig(kv, "FsyncBaseline", "ops/s")},
		{what: "durable SET (`always`), 64 writers sharing fsyncs; goal ≥ 15× one writer", devkit: fig(kv, "SetAlwaysConcurrent/writers=64", "ops/s"),
			peerName: "devkit, 1 writer", peer: fig(kv, "SetAlwaysConcurrent/writers=1", "ops/s")},
		{what: "durable SET into preallocated log segments", devkit: fig(kv, "SetAlwaysPreallocated", "prealloc-ops/s").in("ops/s", 1),
			peerName: "devkit, appending segments", peer: fig(kv, "SetAlwaysPreallocated", "append-ops/s").in("ops/s", 1), ratio: "prealloc/append"},
		{what: "SET without fsync (`none`), 1 writer; goal ≥ 500k ops/s", devkit: fig(kv, "Set/none", "ops/s"),
			peerName: "a bare write(2)", peer: fig(kv, "WriteBaseline", "ops/s")},
		{what: "SET without fsync (`none`), 64 writers", devkit: fig(kv, "SetNoneConcurrent/writers=64", "ops/s"),
			peerName: "a bare write(2)", peer: fig(kv, "WriteBaseline", "ops/s")},
		{what: "Get (returns a copy); goal ≤ 100 ns, 0 allocs", devkit: fig(kv, "Get", "ns/op").in("ns", 1),
			peerName: "a map lookup under a RWMutex", peer: fig(kv, "GetBaseline", "ns/op").in("ns", 1)},
		{what: "GetAppend (into the caller's buffer)", devkit: fig(kv, "GetAppend", "ns/op").in("ns", 1),
			peerName: "a map lookup under a RWMutex", peer: fig(kv, "GetBaseline", "ns/op").in("ns", 1)},
		{what: "Get p99 while 64 writers run under `always`; reads never wait for an fsync", devkit: fig(kv, "GetWhileWriting", "read-p99-ns").in("µs", 1e-3),
			peerName: "one fdatasync", peer: fig(kv, "FsyncBaseline", "ns/op").in("µs", 1e-3)},
		{what: "read-modify-write (Update, INCR-like), concurrent", devkit: fig(kv, "UpdateIncrVsSetConcurrent", "update-ops/s").in("ops/s", 1),
			peerName: "devkit, plain SET", peer: fig(kv, "UpdateIncrVsSetConcurrent", "set-ops/s").in("ops/s", 1), ratio: "update/set"},
		{what: "open 1M keys from a snapshot (log written in key order)", devkit: fig(kv, "Open1M_SnapshotVsLog/log=sequential", "snapshot-ms").in("ms", 1),
			peerName: "devkit, replaying the log", peer: fig(kv, "Open1M_SnapshotVsLog/log=sequential", "log-ms").in("ms", 1), ratio: "snapshot/log"},
		{what: "open 1M keys from a snapshot (log written in random order)", devkit: fig(kv, "Open1M_SnapshotVsLog/log=random", "snapshot-ms").in("ms", 1),
			peerName: "devkit, replaying the log", peer: fig(kv, "Open1M_SnapshotVsLog/log=random", "log-ms").in("ms", 1), ratio: "snapshot/log"},
		{what: "replay of 1M log records; goal ≤ 1 s", devkit: fig(kv, "Replay1M", "ns/op").in("s", 1e-9)},
		{what: "snapshot of 1M keys while 8 writers run", devkit: fig(kv, "SnapshotWhileWriting", "ns/op").in("s", 1e-9)},
		{what: "the writers' p99 during that snapshot", devkit: fig(kv, "SnapshotWhileWriting", "write-p99-ns").in("ms", 1e-6)},
		{what: "memory per key, 1M small keys", devkit: fig(kv, "MemoryPerKey", "engine-B/key").in("B/key", 1),
			peerName: "redis-server", peer: fig(kv, "MemoryPerKey", "redis-B/key").in("B/key", 1), ratio: "engine/redis"},
		{what: "memory per element, 1M hashes of 10 fields; goal ≤ 1.5×", devkit: fig(kv, "MemoryCollections/hash10", "engine-B/elem").in("B/elem", 1),
			peerName: "redis-server", peer: fig(kv, "MemoryCollections/hash10", "redis-B/elem").in("B/elem", 1), ratio: "engine/redis"},
		{what: "memory per element, 100k lists of 100; goal ≤ 1.5×", devkit: fig(kv, "MemoryCollections/list100", "engine-B/elem").in("B/elem", 1),
			peerName: "redis-server", peer: fig(kv, "MemoryCollections/list100", "redis-B/elem").in("B/elem", 1), ratio: "engine/redis"},
		{what: "memory per element, 100k sorted sets of 100; goal ≤ 1.5×", devkit: fig(kv, "MemoryCollections/zset100", "engine-B/elem").in("B/elem", 1),
			peerName: "redis-server", peer: fig(kv, "MemoryCollections/zset100", "redis-B/elem").in("B/elem", 1), ratio: "engine/redis"},
		{what: "redis-benchmark SET, `always` (-c 50 -d 100)", devkit: fig(resp, "RedisBenchmarkSET/SET/sync=always", "loop-ops/s").in("ops/s", 1),
			peerName: "redis-server, appendfsync always", peer: fig(resp, "RedisBenchmarkSET/SET/sync=always", "redis-ops/s").in("ops/s", 1), ratio: "loop/redis"},
		{what: "redis-benchmark SET, `none`", devkit: fig(resp, "RedisBenchmarkSET/SET/sync=none", "loop-ops/s").in("ops/s", 1),
			peerName: "redis-server, no persistence", peer: fig(resp, "RedisBenchmarkSET/SET/sync=none", "redis-ops/s").in("ops/s", 1), ratio: "loop/redis"},
		{what: "redis-benchmark SET, `none`", devkit: fig(resp, "RedisBenchmarkSET/SET/sync=none-vs-appendfsync-no", "loop-ops/s").in("ops/s", 1),
			peerName: "redis-server, appendfsync no", peer: fig(resp, "RedisBenchmarkSET/SET/sync=none-vs-appendfsync-no", "redis-ops/s").in("ops/s", 1), ratio: "loop/redis"},
		{what: "redis-benchmark GET", devkit: fig(resp, "RedisBenchmarkSET/GET", "loop-ops/s").in("ops/s", 1),
			peerName: "redis-server", peer: fig(resp, "RedisBenchmarkSET/GET", "redis-ops/s").in("ops/s", 1), ratio: "loop/redis"},
		{what: "redis-benchmark SET pipelined 16 deep, `always`", devkit: fig(resp, "RedisBenchmarkSET/SET-P16/sync=always", "loop-ops/s").in("ops/s", 1),
			peerName: "redis-server, appendfsync always", peer: fig(resp, "RedisBenchmarkSET/SET-P16/sync=always", "redis-ops/s").in("ops/s", 1), ratio: "loop/redis"},
		{what: "redis-benchmark SET pipelined 16 deep, `none`", devkit: fig(resp, "RedisBenchmarkSET/SET-P16/sync=none", "loop-ops/s").in("ops/s", 1),
			peerName: "redis-server, no persistence", peer: fig(resp, "RedisBenchmarkSET/SET-P16/sync=none", "redis-ops/s").in("ops/s", 1), ratio: "loop/redis"},
		{what: "redis-benchmark GET pipelined 16 deep", devkit: fig(resp, "RedisBenchmarkSET/GET-P16", "loop-ops/s").in("ops/s", 1),
			peerName: "redis-server", peer: fig(resp, "RedisBenchmarkSET/GET-P16", "redis-ops/s").in("ops/s", 1), ratio: "loop/redis"},
		{what: "redis-benchmark SET 4 KB values, memory-only (`--data \"\"`); goal ≥ 1.0×", devkit: fig(resp, "RedisBenchmarkTypes/SET-d4096/memory-only", "devkit-ops/s").in("ops/s", 1),
			peerName: "redis-server, no persistence", peer: fig(resp, "RedisBenchmarkTypes/SET-d4096/memory-only", "redis-ops/s").in("ops/s", 1), ratio: "devkit/redis"},
		{what: "redis-benchmark SET 4 KB values, `none`", devkit: fig(resp, "RedisBenchmarkTypes/SET-d4096/sync=none-vs-appendfsync-no", "devkit-ops/s").in("ops/s", 1),
			peerName: "redis-server, appendfsync no", peer: fig(resp, "RedisBenchmarkTypes/SET-d4096/sync=none-vs-appendfsync-no", "redis-ops/s").in("ops/s", 1), ratio: "devkit/redis"},
		{what: "redis-benchmark GET 4 KB values, memory-only; goal ≥ 1.0×", devkit: fig(resp, "RedisBenchmarkTypes/GET-d4096/memory-only", "devkit-ops/s").in("ops/s", 1),
			peerName: "redis-server, no persistence", peer: fig(resp, "RedisBenchmarkTypes/GET-d4096/memory-only", "redis-ops/s").in("ops/s", 1), ratio: "devkit/redis"},
		{what: "redis-benchmark SET, 1 connection, memory-only; goal ≥ 1.0×", devkit: fig(resp, "RedisBenchmarkTypes/SET-c1/memory-only", "devkit-ops/s").in("ops/s", 1),
			peerName: "redis-server, no persistence", peer: fig(resp, "RedisBenchmarkTypes/SET-c1/memory-only", "redis-ops/s").in("ops/s", 1), ratio: "devkit/redis"},
		{what: "redis-benchmark SET, 1 connection, `none`; goal ≥ 1.0×", devkit: fig(resp, "RedisBenchmarkTypes/SET-c1/sync=none", "devkit-ops/s").in("ops/s", 1),
			peerName: "redis-server, no persistence", peer: fig(resp, "RedisBenchmarkTypes/SET-c1/sync=none", "redis-ops/s").in("ops/s", 1), ratio: "devkit/redis"},
		{what: "redis-benchmark SET, 1 connection, `none`", devkit: fig(resp, "RedisBenchmarkTypes/SET-c1/sync=none-vs-appendfsync-no", "devkit-ops/s").in("ops/s", 1),
			peerName: "redis-server, appendfsync no", peer: fig(resp, "RedisBenchmarkTypes/SET-c1/sync=none-vs-appendfsync-no", "redis-ops/s").in("ops/s", 1), ratio: "devkit/redis"},
		{what: "redis-benchmark GET, 1 connection, memory-only; goal ≥ 1.0×", devkit: fig(resp, "RedisBenchmarkTypes/GET-c1/memory-only", "devkit-ops/s").in("ops/s", 1),
			peerName: "redis-server, no persistence", peer: fig(resp, "RedisBenchmarkTypes/GET-c1/memory-only", "redis-ops/s").in("ops/s", 1), ratio: "devkit/redis"},
		{what: "redis-benchmark SET, `always`, 20,000 a turn; goal ≥ 1.2×", devkit: fig(resp, "RedisBenchmarkTypes/SET-short/sync=always", "devkit-ops/s").in("ops/s", 1),
			peerName: "redis-server, appendfsync always", peer: fig(resp, "RedisBenchmarkTypes/SET-short/sync=always", "redis-ops/s").in("ops/s", 1), ratio: "devkit/redis"},
		{what: "redis-benchmark LPUSH, `none`; goal ≥ 1.0×", devkit: fig(resp, "RedisBenchmarkTypes/LPUSH/sync=none", "devkit-ops/s").in("ops/s", 1),
			peerName: "redis-server, no persistence", peer: fig(resp, "RedisBenchmarkTypes/LPUSH/sync=none", "redis-ops/s").in("ops/s", 1), ratio: "devkit/redis"},
		{what: "redis-benchmark LPOP, `none`; goal ≥ 1.0×", devkit: fig(resp, "RedisBenchmarkTypes/LPOP/sync=none", "devkit-ops/s").in("ops/s", 1),
			peerName: "redis-server, no persistence", peer: fig(resp, "RedisBenchmarkTypes/LPOP/sync=none", "redis-ops/s").in("ops/s", 1), ratio: "devkit/redis"},
		{what: "redis-benchmark SADD, `none`; goal ≥ 1.0×", devkit: fig(resp, "RedisBenchmarkTypes/SADD/sync=none", "devkit-ops/s").in("ops/s", 1),
			peerName: "redis-server, no persistence", peer: fig(resp, "RedisBenchmarkTypes/SADD/sync=none", "redis-ops/s").in("ops/s", 1), ratio: "devkit/redis"},
		{what: "redis-benchmark HSET, `none`; goal ≥ 1.0×", devkit: fig(resp, "RedisBenchmarkTypes/HSET/sync=none", "devkit-ops/s").in("ops/s", 1),
			peerName: "redis-server, no persistence", peer: fig(resp, "RedisBenchmarkTypes/HSET/sync=none", "redis-ops/s").in("ops/s", 1), ratio: "devkit/redis"},
		{what: "redis-benchmark ZADD, `none`; goal ≥ 1.0×", devkit: fig(resp, "RedisBenchmarkTypes/ZADD/sync=none", "devkit-ops/s").in("ops/s", 1),
			peerName: "redis-server, no persistence", peer: fig(resp, "RedisBenchmarkTypes/ZADD/sync=none", "redis-ops/s").in("ops/s", 1), ratio: "devkit/redis"},
		{what: "redis-benchmark LRANGE_100, `none`; goal ≥ 1.0×", devkit: fig(resp, "RedisBenchmarkTypes/LRANGE_100/sync=none", "devkit-ops/s").in("ops/s", 1),
			peerName: "redis-server, no persistence", peer: fig(resp, "RedisBenchmarkTypes/LRANGE_100/sync=none", "redis-ops/s").in("ops/s", 1), ratio: "devkit/redis"},
		{what: "redis-benchmark LPUSH, `always`; goal ≥ 1.2×", devkit: fig(resp, "RedisBenchmarkTypes/LPUSH/sync=always", "devkit-ops/s").in("ops/s", 1),
			peerName: "redis-server, appendfsync always", peer: fig(resp, "RedisBenchmarkTypes/LPUSH/sync=always", "redis-ops/s").in("ops/s", 1), ratio: "devkit/redis"},
		{what: "redis-benchmark SADD, `always`; goal ≥ 1.2×", devkit: fig(resp, "RedisBenchmarkTypes/SADD/sync=always", "devkit-ops/s").in("ops/s", 1),
			peerName: "redis-server, appendfsync always", peer: fig(resp, "RedisBenchmarkTypes/SADD/sync=always", "redis-ops/s").in("ops/s", 1), ratio: "devkit/redis"},
		{what: "redis-benchmark HSET, `always`; goal ≥ 1.2×", devkit: fig(resp, "RedisBenchmarkTypes/HSET/sync=always", "devkit-ops/s").in("ops/s", 1),
			peerName: "redis-server, appendfsync always", peer: fig(resp, "RedisBenchmarkTypes/HSET/sync=always", "redis-ops/s").in("ops/s", 1), ratio: "devkit/redis"},
		{what: "redis-benchmark ZADD, `always`; goal ≥ 1.2×", devkit: fig(resp, "RedisBenchmarkTypes/ZADD/sync=always", "devkit-ops/s").in("ops/s", 1),
			peerName: "redis-server, appendfsync always", peer: fig(resp, "RedisBenchmarkTypes/ZADD/sync=always", "redis-ops/s").in("ops/s", 1), ratio: "devkit/redis"},
		{what: "EVALSHA of a small script (go-redis), 1 goroutine", devkit: fig(resp, "Evalsha_DevkitVsRedis/goroutines=1", "devkit-ops/s").in("ops/s", 1),
			peerName: "redis-server", peer: fig(resp, "Evalsha_DevkitVsRedis/goroutines=1", "redis-ops/s").in("ops/s", 1), ratio: "devkit/redis"},
		{what: "EVALSHA of a small script (go-redis), 50 goroutines", devkit: fig(resp, "Evalsha_DevkitVsRedis/goroutines=50", "devkit-ops/s").in("ops/s", 1),
			peerName: "redis-server", peer: fig(resp, "Evalsha_DevkitVsRedis/goroutines=50", "redis-ops/s").in("ops/s", 1), ratio: "devkit/redis"},
		{what: "HTTP GET of a key, p50", devkit: fig(http, "HTTPGetVsBareHandler", "ours-p50-ns").in("µs", 1e-3),
			peerName: "a bare net/http handler", peer: fig(http, "HTTPGetVsBareHandler", "bare-p50-ns").in("µs", 1e-3), ratio: "ours/bare"},
	}},
	{name: "ratelimit", dir: "ratelimit", rows: []workload{
		{what: "the Redis store's checks in devkit kv (`periodic`), 50 goroutines", devkit: fig(rs, "Store_DevkitKVVsRedis/sync=everysec", "devkit-checks/s").in("checks/s", 1),
			peerName: "redis-server, appendfsync everysec", peer: fig(rs, "Store_DevkitKVVsRedis/sync=everysec", "redis-checks/s").in("checks/s", 1), ratio: "devkit/redis"},
		{what: "the Redis store's checks in devkit kv (`always`), 50 goroutines", devkit: fig(rs, "Store_DevkitKVVsRedis/sync=always", "devkit-checks/s").in("checks/s", 1),
			peerName: "redis-server, appendfsync always", peer: fig(rs, "Store_DevkitKVVsRedis/sync=always", "redis-checks/s").in("checks/s", 1), ratio: "devkit/redis"},
		{what: "GCRA checks in Redis, 50 goroutines", devkit: fig(cmp, "CompareInterleaved", "devkit-gcra/s").in("checks/s", 1),
			peerName: "go-redis/redis_rate", peer: fig(cmp, "CompareInterleaved", "redis_rate-gcra/s").in("checks/s", 1), ratio: "devkit-gcra/redis_rate"},
		{what: "GCRA checks in Redis, 50 goroutines, batching off", devkit: fig(cmp, "CompareInterleaved", "devkit-gcra-unbatched/s").in("checks/s", 1),
			peerName: "go-redis/redis_rate", peer: fig(cmp, "CompareInterleaved", "redis_rate-gcra/s").in("checks/s", 1), ratio: "devkit-gcra-unbatched/redis_rate"},
		{what: "fixed-window checks in Redis, 50 goroutines", devkit: fig(cmp, "CompareInterleaved", "devkit-fixed-window/s").in("checks/s", 1),
			peerName: "ulule/limiter", peer: fig(cmp, "CompareInterleaved", "ulule-fixed-window/s").in("checks/s", 1), ratio: "devkit-fixed-window/ulule"},
		{what: "fixed-window checks in Redis, 50 goroutines, batching off", devkit: fig(cmp, "CompareInterleaved", "devkit-fixed-window-unbatched/s").in("checks/s", 1),
			peerName: "ulule/limiter", peer: fig(cmp, "CompareInterleaved", "ulule-fixed-window/s").in("checks/s", 1)},
		{what: "GCRA check in Redis, 1 goroutine, client time", devkit: fig(cmp, "CompareMedians/1goroutines", "devkit-gcra-client-µs/check").in("µs", 1),
			peerName: "go-redis/redis_rate", peer: fig(cmp, "CompareMedians/1goroutines", "redis_rate-gcra-client-µs/check").in("µs", 1)},
		{what: "three limits of a rule in one Redis round trip", devkit: fig(rs, "Redis_ThreeLimitsOneCheck", "ns/op").in("µs", 1e-3),
			peerName: "devkit, three single checks", peer: fig(rs, "Redis_ThreeSingleChecks", "ns/op").in("µs", 1e-3)},
		{what: "in-memory check, one goroutine per core", devkit: fig(rl, "MemoryStore_Parallel", "ns/op").in("ns", 1)},
		{what: "Envoy RLS `ShouldRateLimit` on Redis, 50 gRPC clients, many identities; goal ≥ 1.5×", devkit: fig(rls, "ShouldRateLimitVsEnvoyRatelimit/many", "devkit-decisions/s").in("decisions/s", 1),
			peerName: "envoyproxy/ratelimit", peer: fig(rls, "ShouldRateLimitVsEnvoyRatelimit/many", "envoy-decisions/s").in("decisions/s", 1), ratio: "devkit/envoy"},
		{what: "Envoy RLS `ShouldRateLimit` on Redis, 50 gRPC clients, one hot identity; goal ≥ 1.5×", devkit: fig(rls, "ShouldRateLimitVsEnvoyRatelimit/hot", "devkit-decisions/s").in("decisions/s", 1),
			peerName: "envoyproxy/ratelimit", peer: fig(rls, "ShouldRateLimitVsEnvoyRatelimit/hot", "envoy-decisions/s").in("decisions/s", 1), ratio: "devkit/envoy"},
		{what: "Envoy RLS `ShouldRateLimit` on Redis, 50 gRPC clients on 2 connections (Envoy's shape), many identities", devkit: fig(rls, "ShouldRateLimitVsEnvoyRatelimit/many-2conns", "devkit-decisions/s").in("decisions/s", 1),
			peerName: "envoyproxy/ratelimit", peer: fig(rls, "ShouldRateLimitVsEnvoyRatelimit/many-2conns", "envoy-decisions/s").in("decisions/s", 1), ratio: "devkit/envoy"},
		{what: "gateway: allowed requests proxied to one upstream", devkit: fig(gw, "Gateway_PassThrough", "gateway-req/s").in("req/s", 1),
			peerName: "httputil.ReverseProxy", peer: fig(gw, "Gateway_PassThrough", "reverseproxy-req/s").in("req/s", 1), ratio: "gateway/reverseproxy"},
		{what: "gateway (memory store): requests proxied, 200 connections", devkit: fig(gw, "Gateway_PassThroughVsNginxAndReverseProxy/conns=200", "gateway-req/s").in("req/s", 1),
			peerName: "nginx limit_req + proxy_pass", peer: fig(gw, "Gateway_PassThroughVsNginxAndReverseProxy/conns=200", "nginx-req/s").in("req/s", 1), ratio: "gateway/nginx"},
		{what: "gateway (memory store): requests proxied, 200 connections", devkit: fig(gw, "Gateway_PassThroughVsNginxAndReverseProxy/conns=200", "gateway-req/s").in("req/s", 1),
			peerName: "httputil.ReverseProxy", peer: fig(gw, "Gateway_PassThroughVsNginxAndReverseProxy/conns=200", "reverseproxy-req/s").in("req/s", 1), ratio: "gateway/reverseproxy"},
		{what: "gateway (memory store): p99 of requests proxied, 200 connections", devkit: fig(gw, "Gateway_PassThroughVsNginxAndReverseProxy/conns=200", "gateway-p99-µs").in("µs", 1),
			peerName: "nginx limit_req + proxy_pass", peer: fig(gw, "Gateway_PassThroughVsNginxAndReverseProxy/conns=200", "nginx-p99-µs").in("µs", 1)},
		{what: "gateway (memory store): requests proxied, 1000 connections", devkit: fig(gw, "Gateway_PassThroughVsNginxAndReverseProxy/conns=1000", "gateway-req/s").in("req/s", 1),
			peerName: "nginx limit_req + proxy_pass", peer: fig(gw, "Gateway_PassThroughVsNginxAndReverseProxy/conns=1000", "nginx-req/s").in("req/s", 1), ratio: "gateway/nginx"},
		{what: "gateway (memory store): requests proxied, 1000 connections", devkit: fig(gw, "Gateway_PassThroughVsNginxAndReverseProxy/conns=1000", "gateway-req/s").in("req/s", 1),
			peerName: "httputil.ReverseProxy", peer: fig(gw, "Gateway_PassThroughVsNginxAndReverseProxy/conns=1000", "reverseproxy-req/s").in("req/s", 1), ratio: "gateway/reverseproxy"},
		{what: "gateway (memory store): p99 of requests proxied, 1000 connections", devkit: fig(gw, "Gateway_PassThroughVsNginxAndReverseProxy/conns=1000", "gateway-p99-µs").in("µs", 1),
			peerName: "nginx limit_req + proxy_pass", peer: fig(gw, "Gateway_PassThroughVsNginxAndReverseProxy/conns=1000", "nginx-p99-µs").in("µs", 1)},
		{what: "gateway (memory store): requests proxied, 200 connections; goal ≥ 1.0×", devkit: fig(gw, "Gateway_PassThroughVsNginxAndReverseProxy/conns=200", "gateway-req/s").in("req/s", 1),
			peerName: "Caddy reverse_proxy", peer: fig(gw, "Gateway_PassThroughVsNginxAndReverseProxy/conns=200", "caddy-req/s").in("req/s", 1), ratio: "gateway/caddy"},
		{what: "gateway (memory store): requests proxied, 1000 connections; goal ≥ 1.0×", devkit: fig(gw, "Gateway_PassThroughVsNginxAndReverseProxy/conns=1000", "gateway-req/s").in("req/s", 1),
			peerName: "Caddy reverse_proxy", peer: fig(gw, "Gateway_PassThroughVsNginxAndReverseProxy/conns=1000", "caddy-req/s").in("req/s", 1), ratio: "gateway/caddy"},
		{what: "gateway (memory store): requests proxied, 200 connections, Connection: close; goal ≥ 0.5×", devkit: fig(gw, "Gateway_PassThroughVsNginxAndReverseProxy/close/conns=200", "gateway-req/s").in("req/s", 1),
			peerName: "nginx limit_req + proxy_pass", peer: fig(gw, "Gateway_PassThroughVsNginxAndReverseProxy/close/conns=200", "nginx-req/s").in("req/s", 1), ratio: "gateway/nginx"},
		{what: "gateway (memory store): requests proxied, 200 connections, Connection: close; goal ≥ 1.0×", devkit: fig(gw, "Gateway_PassThroughVsNginxAndReverseProxy/close/conns=200", "gateway-req/s").in("req/s", 1),
			peerName: "Caddy reverse_proxy", peer: fig(gw, "Gateway_PassThroughVsNginxAndReverseProxy/close/conns=200", "caddy-req/s").in("req/s", 1), ratio: "gateway/caddy"},
		{what: "gateway (memory store): requests proxied, 200 connections, Connection: close", devkit: fig(gw, "Gateway_PassThroughVsNginxAndReverseProxy/close/conns=200", "gateway-req/s").in("req/s", 1),
			peerName: "httputil.ReverseProxy", peer: fig(gw, "Gateway_PassThroughVsNginxAndReverseProxy/close/conns=200", "reverseproxy-req/s").in("req/s", 1), ratio: "gateway/reverseproxy"},
		{what: "gateway (memory store): requests proxied, 1000 connections, Connection: close; goal ≥ 0.5×", devkit: fig(gw, "Gateway_PassThroughVsNginxAndReverseProxy/close/conns=1000", "gateway-req/s").in("req/s", 1),
			peerName: "nginx limit_req + proxy_pass", peer: fig(gw, "Gateway_PassThroughVsNginxAndReverseProxy/close/conns=1000", "nginx-req/s").in("req/s", 1), ratio: "gateway/nginx"},
		{what: "gateway (memory store): requests proxied, 1000 connections, Connection: close; goal ≥ 1.0×", devkit: fig(gw, "Gateway_PassThroughVsNginxAndReverseProxy/close/conns=1000", "gateway-req/s").in("req/s", 1),
			peerName: "Caddy reverse_proxy", peer: fig(gw, "Gateway_PassThroughVsNginxAndReverseProxy/close/conns=1000", "caddy-req/s").in("req/s", 1), ratio: "gateway/caddy"},
		{what: "gateway (memory store): requests proxied, 1000 connections, Connection: close", devkit: fig(gw, "Gateway_PassThroughVsNginxAndReverseProxy/close/conns=1000", "gateway-req/s").in("req/s", 1),
			peerName: "httputil.ReverseProxy", peer: fig(gw, "Gateway_PassThroughVsNginxAndReverseProxy/close/conns=1000", "reverseproxy-req/s").in("req/s", 1), ratio: "gateway/reverseproxy"},
		{what: "gateway: 429s to a flood (Go load generator)", devkit: fig(gw, "Gateway_RejectionVsNginx", "gateway-req/s").in("req/s", 1),
			peerName: "nginx limit_req", peer: fig(gw, "Gateway_RejectionVsNginx", "nginx-req/s").in("req/s", 1), ratio: "gateway/nginx"},
		{what: "gateway: 429s to a flood (wrk, 1 thread)", devkit: fig(gw, "Gateway_RejectionVsNginxWrk1", "gateway-req/s").in("req/s", 1),
			peerName: "nginx limit_req", peer: fig(gw, "Gateway_RejectionVsNginxWrk1", "nginx-req/s").in("req/s", 1), ratio: "gateway/nginx"},
		{what: "gateway: 429s to a flood (wrk, 2 threads)", devkit: fig(gw, "Gateway_RejectionVsNginxWrk2", "gateway-req/s").in("req/s", 1),
			peerName: "nginx limit_req", peer: fig(gw, "Gateway_RejectionVsNginxWrk2", "nginx-req/s").in("req/s", 1), ratio: "gateway/nginx"},
		{what: "gateway: 429s to a flood (wrk, 2 threads, 50 connections); goal ≥ 0.8×", devkit: fig(gw, "Gateway_RejectionVsNginxWrkConns/conns=50", "gateway-req/s").in("req/s", 1),
			peerName: "nginx limit_req", peer: fig(gw, "Gateway_RejectionVsNginxWrkConns/conns=50", "nginx-req/s").in("req/s", 1), ratio: "gateway/nginx"},
		{what: "gateway: 429s to a flood (wrk, 2 threads, 1000 connections); goal ≥ 0.8×", devkit: fig(gw, "Gateway_RejectionVsNginxWrkConns/conns=1000", "gateway-req/s").in("req/s", 1),
			peerName: "nginx limit_req", peer: fig(gw, "Gateway_RejectionVsNginxWrkConns/conns=1000", "nginx-req/s").in("req/s", 1), ratio: "gateway/nginx"},
		{what: "the standard library's ceiling: a bare net/http handler answering the gateway's 429, no limiter (wrk, 50 connections)", devkit: fig(gw, "Gateway_RejectionCeilingVsNginxWrkConns/response=gateway/conns=50", "gateway-req/s").in("req/s", 1),
			peerName: "nginx limit_req", peer: fig(gw, "Gateway_RejectionCeilingVsNginxWrkConns/response=gateway/conns=50", "nginx-req/s").in("req/s", 1), ratio: "gateway/nginx"},
		{what: "the standard library's ceiling: a bare net/http handler answering the gateway's 429, no limiter (wrk, 1000 connections)", devkit: fig(gw, "Gateway_RejectionCeilingVsNginxWrkConns/response=gateway/conns=1000", "gateway-req/s").in("req/s", 1),
			peerName: "nginx limit_req", peer: fig(gw, "Gateway_RejectionCeilingVsNginxWrkConns/response=gateway/conns=1000", "nginx-req/s").in("req/s", 1), ratio: "gateway/nginx"},
		{what: "nginx auth_request asking devkit's auth endpoint (memory store), 200 connections; goal ≥ 0.5×", devkit: fig(gw, "Gateway_AuthRequestVsNginxLimitReq/conns=200", "nginx-auth-request-req/s").in("req/s", 1),
			peerName: "nginx limit_req + proxy_pass", peer: fig(gw, "Gateway_AuthRequestVsNginxLimitReq/conns=200", "nginx-limit-req-req/s").in("req/s", 1), ratio: "auth-request/limit-req"},
		{what: "gateway: 429s, both sending the gateway's response", devkit: fig(gw, "Gateway_RejectionVsNginxSameResponse", "gateway-req/s").in("req/s", 1),
			peerName: "nginx limit_req", peer: fig(gw, "Gateway_RejectionVsNginxSameResponse", "nginx-same-response-req/s").in("req/s", 1), ratio: "gateway/nginx-same-response"},
		{what: "gateway: 429s", devkit: fig(gw, "Gateway_RejectionVsNetHTTP", "gateway-req/s").in("req/s", 1),
			peerName: "a static net/http handler", peer: fig(gw, "Gateway_RejectionVsNetHTTP", "nethttp-static-req/s").in("req/s", 1), ratio: "gateway/nethttp-static"},
		{what: "gateway: allowed requests' p99 under a flood", devkit: fig(gw, "Gateway_AllowedLatencyUnderFlood", "gateway-allowed-p99-µs").in("µs", 1),
			peerName: "nginx limit_req", peer: fig(gw, "Gateway_AllowedLatencyUnderFlood", "nginx-allowed-p99-µs").in("µs", 1), ratio: "allowed-p99-gateway/nginx"},
		{what: "gateway: one request at a time, p50", devkit: fig(gw, "Gateway_AddedLatency", "gateway-p50-µs").in("µs", 1),
			peerName: "the upstream directly", peer: fig(gw, "Gateway_AddedLatency", "direct-p50-µs").in("µs", 1)},
	}},
	{name: "supervisor", dir: "supervisor", rows: []workload{
		{what: "start 20 processes and wait until ready", devkit: fig(sup, "PeerStartAll20", "sup-ms/op").in("ms", 1),
			peerName: "supervisord", peer: fig(sup, "PeerStartAll20", "supervisord-ms/op").in("ms", 1)},
		{what: "start one process (record, monitor, verify)", devkit: fig(sup, "Start", "ns/op").in("ms", 1e-6)},
		{what: "stop one process", devkit: fig(sup, "Stop", "ns/op").in("ms", 1e-6)},
		{what: "status of 50 processes", devkit: fig(sup, "Status50", "ns/op").in("ms", 1e-6)},
		{what: "start 20 processes with ready probes, time beyond the probes' 1 s", devkit: fig(sup, "StartAll20", "ready-overhead-ms/op").in("ms", 1)},
		{what: "log rotation under 50 MB/s, peak disk", devkit: fig(sup, "LogPeakDisk50MBps", "peak-MiB").in("MiB", 1)},
	}},
}

// Render writes the page: one table per module, each row a workload with
// devkit's figure, its peer's, their ratio and the command that measures it.
func Render(w io.Writer, run Run) error {
	b := &strings.Builder{}
	b.WriteString("# Benchmarks\n\n")
	b.WriteString("Generated by `make bench` (tools/benchdoc) — do not edit by hand. Every figure of every benchmark is in\n")
	b.WriteString("[benchmarks-raw.txt](benchmarks-raw.txt), in Go's benchmark format (benchstat reads it); this page shows the\n")
	b.WriteString("workloads a reader asks about, each beside the peer or baseline measured in the same run. To render the\n")
	b.WriteString("page again from that file without running anything:\n")
	b.WriteString("`go run ./tools/benchdoc -in docs/benchmarks-raw.txt -out docs/benchmarks.md`.\n\n")
	b.WriteString("**ratio** is devkit ÷ peer, or the benchmark's own median of paired rounds where it takes turns: above 1\n")
	b.WriteString("is better for rates (/s), below 1 for times and sizes. Figures come from one run on a shared machine; compare\n")
	b.WriteString("the ratios within a table, not absolute figures across machines. A command runs in the module's directory.\n\n")
	machine := fmt.Sprintf("%s, %d cores, %s/%s, %s, %s", orUnknown(run.CPU), run.Cores, run.GOOS, run.GOARCH, run.GoVersion, run.Date)
	for _, m := range modules {
		var rows []string
		for _, wl := range m.rows {
			if row, ok := renderRow(run, m, wl); ok {
				rows = append(rows, row)
			}
		}
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(b, "## %s\n\nMachine: %s.\n\n", m.name, machine)
		b.WriteString("| workload | devkit | peer | ratio | reproduce |\n|---|---:|---|---:|---|\n")
		for _, row := range rows {
			b.WriteString(row)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// renderRow returns the row of wl, or false when the run lacks devkit's
// figure (a benchmark that did not run, or no longer exists).
func renderRow(run Run, m module, wl workload) (string, bool) {
	dv, ok := value(run, wl.devkit)
	if !ok {
		return "", false
	}
	peer, ratio := "—", "—"
	if wl.peerName != "" {
		if pv, ok := value(run, wl.peer); ok {
			peer = wl.peerName + ": " + formatFigure(pv, wl.peer)
			if pv != 0 {
				ratio = formatRatio(dv / pv)
			}
		} else {
			peer = wl.peerName + ": not measured in this run"
		}
		if wl.ratio != "" {
			if r, ok := raw(run, wl.devkit.pkg, wl.devkit.bench, wl.ratio); ok {
				ratio = formatRatio(r)
			}
		}
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %s |\n", wl.what, formatFigure(dv, wl.devkit), peer, ratio, command(m, wl)), true
}

// value is f's metric in the unit the page shows it in.
func value(run Run, f figure) (float64, bool) {
	v, ok := raw(run, f.pkg, f.bench, f.unit)
	if !ok {
		return 0, false
	}
	if f.scale != 0 {
		v *= f.scale
	}
	return v, true
}

func raw(run Run, pkg, bench, unit string) (float64, bool) {
	r, ok := run.Find(pkg, "Benchmark"+bench)
	if !ok {
		return 0, false
	}
	return r.Get(unit)
}

// command is the go test line that measures the row's figures, run in the
// module's directory.
func command(m module, wl workload) string {
	pkg := wl.devkit.pkg
	var names []string
	for _, f := range []figure{wl.devkit, wl.peer} {
		if f.bench == "" {
			continue
		}
		top, _, _ := strings.Cut(f.bench, "/")
		if !containsString(names, top) {
			names = append(names, top)
		}
	}
	pattern := "^Benchmark" + names[0] + "$"
	if len(names) > 1 {
		pattern = "^Benchmark(" + strings.Join(names, "|") + ")$"
	}
	dir, rel := m.dir, "."
	if sub, ok := strings.CutPrefix(pkg, m.dir+"/"); ok {
		rel = "./" + sub
		// A package of a nested module (ratelimit/benchcmp) runs in its own directory.
		if pkg == cmp {
			dir, rel = cmp, "."
		}
	}
	// A | inside a table cell ends the cell, even in a code span, unless escaped.
	pattern = strings.ReplaceAll(pattern, "|", `\|`)
	return fmt.Sprintf("`cd %s && go test -run '^$' -bench '%s' -benchmem %s`", dir, pattern, rel)
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// formatFigure prints v with the page's unit: three significant digits at
// most below 1000, thousands separated above.
func formatFigure(v float64, f figure) string {
	unit := f.show
	if unit == "" {
		unit = f.unit
	}
	return formatNumber(v) + " " + unit
}

func formatNumber(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1000:
		s := strconv.FormatInt(int64(math.Round(v)), 10)
		neg := strings.HasPrefix(s, "-")
		s = strings.TrimPrefix(s, "-")
		for i := len(s) - 3; i > 0; i -= 3 {
			s = s[:i] + "," + s[i:]
		}
		if neg {
			s = "-" + s
		}
		return s
	case a >= 100 || v == math.Trunc(v):
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

func formatRatio(r float64) string {
	if r < 0.1 {
		return strconv.FormatFloat(r, 'f', 3, 64) + "×"
	}
	return strconv.FormatFloat(r, 'f', 2, 64) + "×"
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown CPU"
	}
	return s
}
