package middleware

// The admin API never answers a request without the bearer token when one
// is set (compared in constant time). Its JSON is that of the ratelimit
// types it serves (their schema rule: snake_case, durations as float seconds
// in `_seconds` fields, the rule of the CLI's --json too), and its /metrics
// is a Prometheus registry fed from the limiter's counters (Collector).

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/devkit-go/devkit/ratelimit"
)

// AdminOptions configure the admin API. The zero value is usable.
type AdminOptions struct {
	// Token, when set, is the bearer token every request must carry
	// (Authorization: Bearer <token>); others get 401.
	Token string
	// Metrics, when set, are served on /metrics beside the limiter's (the
	// gateway's registry: upstream metrics, Go runtime and process).
	Metrics prometheus.Gatherer
	// Policy, when set, is served as JSON on /policy (the gateway's policy
	// in force and its last reload).
	Policy func() any
}

// NewAdmin returns the inspection API of a limiter, to be served on an
// address clients cannot reach (so that nobody resets their own limits):
//
//	GET  /metrics           counters per rule and limit, Prometheus text format
//	GET  /health            store ping, latency and circuit breakers (503 when unreachable)
//	GET  /stats             decisions per rule as JSON, those of the failure policy included (fail_open, fail_closed)
//	GET  /top?n=10          identities with the most hits (the store's)
//	GET  /top?by=denied&n=10  identities this process denied most (a bounded sketch: Limiter.TopDenied)
//	GET  /info?key=K        stored state of one identity
//	POST /reset?key=K       delete one identity's state, on every proxy sharing the store
//	GET  /policy            the policy in force and its last reload (when AdminOptions.Policy is set)
func NewAdmin(l *ratelimit.Limiter, opts AdminOptions) http.Handler {
	mux := http.NewServeMux()
	registry := prometheus.NewRegistry()
	registry.MustRegister(NewCollector(l)) // a new registry: nothing to collide with
	gatherers := prometheus.Gatherers{registry}
	if opts.Metrics != nil {
		gatherers = append(gatherers, opts.Metrics)
	}
	mux.Handle("GET /metrics", promhttp.HandlerFor(gatherers, promhttp.HandlerOpts{}))
	if opts.Policy != nil {
		mux.HandleFunc("GET /policy", func(w http.ResponseWriter, r *http.Request) { adminJSON(w, http.StatusOK, opts.Policy()) })
	}
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		took, err := l.Health(ctx)
		h := Health{OK: err == nil, LatencySeconds: took.Seconds(), Breakers: l.Breakers()}
		if es, ok := l.Store().(ratelimit.Evicting); ok {
			ev := es.Evictions()
			h.Evictions = &ev
		}
		status := http.StatusOK
		if err != nil {
			h.Error, status = err.Error(), http.StatusServiceUnavailable
		}
		adminJSON(w, status, h)
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		stats := l.Stats().Snapshot()
		if stats == nil {
			stats = []ratelimit.RuleCounters{}
		}
		adminJSON(w, http.StatusOK, stats)
	})
	mux.HandleFunc("GET /top", func(w http.ResponseWriter, r *http.Request) {
		n := 10
		if s := r.URL.Query().Get("n"); s != "" {
			v, err := strconv.Atoi(s)
			if err != nil || v < 1 || v > 10000 {
				adminError(w, r, http.StatusBadRequest, "n must be an integer from 1 to 10000")
				return
			}
			n = v
		}
		switch r.URL.Query().Get("by") {
		case "", "hits":
		case "denied":
			denied := l.TopDenied(n)
			if denied == nil {
				denied = []ratelimit.DeniedConsumer{}
			}
			adminJSON(w, http.StatusOK, denied)
			return
		default:
			adminError(w, r, http.StatusBadRequest, "by must be hits or denied")
			return
		}
		top, err := l.Top(r.Context(), n)
		if err != nil {
			adminError(w, r, http.StatusBadGateway, err.Error())
			return
		}
		if top == nil {
			top = []ratelimit.Consumer{}
		}
		adminJSON(w, http.StatusOK, top)
	})
	mux.HandleFunc("GET /info", func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.Query().Get("key")
		if key == "" {
			adminError(w, r, http.StatusBadRequest, "key is required: /info?key=K")
			return
		}
		info, err := l.Store().Info(r.Context(), key)
		if err != nil {
			adminError(w, r, http.StatusBadGateway, err.Error())
			return
		}
		status := http.StatusOK
		if !info.Exists {
			status = http.StatusNotFound
		}
		adminJSON(w, status, info)
	})
	mux.HandleFunc("POST /reset", func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.Query().Get("key")
		if key == "" {
			adminError(w, r, http.StatusBadRequest, "key is required: /reset?key=K")
			return
		}
		had, err := l.Reset(r.Context(), key)
		if err != nil {
			adminError(w, r, http.StatusBadGateway, err.Error())
			return
		}
		adminJSON(w, http.StatusOK, ResetJSON{Key: key, Existed: had})
	})
	if opts.Token == "" {
		return mux
	}
	want := []byte("Bearer " + opts.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="devkit ratelimit admin"`)
			adminError(w, r, http.StatusUnauthorized, "a bearer token is required: Authorization: Bearer <token> (--admin-token)")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// Health is the /health answer.
type Health struct {
	OK             bool                     `json:"ok"`
	LatencySeconds float64                  `json:"latency_seconds"`
	Error          string                   `json:"error,omitempty"`
	Breakers       []ratelimit.BreakerState `json:"breakers,omitempty"`
	// Evictions are the live identities a bounded store (memory) evicted
	// to make room; absent for stores that evict nothing themselves.
	Evictions *ratelimit.Evictions `json:"evictions,omitempty"`
}

// ResetJSON is the /reset answer and the JSON of `devkit ratelimit reset`.
// (The /info and /top answers are ratelimit.KeyInfo and []ratelimit.Consumer.)
type ResetJSON struct {
	Key     string `json:"key"`
	Existed bool   `json:"existed"`
}

func adminJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the status is sent; a failed write means the client left
}

// adminError answers with a problem+json body (RFC 9457).
func adminError(w http.ResponseWriter, r *http.Request, status int, detail string) {
	WriteError(w, r, status, detail)
}

// WriteError answers status with a problem+json body (RFC 9457) whose detail
// says what to do: for gateway and admin errors alike.
func WriteError(w http.ResponseWriter, r *http.Request, status int, detail string) {
	writeJSON(w, Problem{Type: "about:blank", Title: http.StatusText(status), Status: status,
		Detail: strings.TrimSpace(detail), Instance: r.URL.Path})
}
