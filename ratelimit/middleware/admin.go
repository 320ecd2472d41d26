package middleware

// The admin API never answers a request without the bearer token when one
// is set (compared in constant time), and its JSON durations are seconds
// (`_seconds` fields), the convention of the CLI's --json.

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
)

// AdminOptions configure the admin API. The zero value is usable.
type AdminOptions struct {
	// Token, when set, is the bearer token every request must carry
	// (Authorization: Bearer <token>); others get 401.
	Token string
	// ExtraMetrics, when set, writes more Prometheus text after the
	// limiter's (the gateway's upstream metrics).
	ExtraMetrics func(w io.Writer) error
}

// NewAdmin returns the inspection API of a limiter, to be served on an
// address clients cannot reach (so that nobody resets their own limits):
//
//	GET  /metrics           counters per rule and limit, Prometheus text format
//	GET  /health            store ping, latency and circuit breakers (503 when unreachable)
//	GET  /top?n=10          identities with the most hits
//	GET  /info?key=K        stored state of one identity
//	POST /reset?key=K       delete one identity's state, on every proxy sharing the store
func NewAdmin(l *ratelimit.Limiter, opts AdminOptions) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		if err := l.Stats().WritePrometheus(w); err != nil {
			return // the client left
		}
		if opts.ExtraMetrics != nil {
			_ = opts.ExtraMetrics(w)
		}
	})
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		took, err := l.Health(ctx)
		h := Health{OK: err == nil, LatencySeconds: took.Seconds(), Breakers: l.Breakers()}
		status := http.StatusOK
		if err != nil {
			h.Error, status = err.Error(), http.StatusServiceUnavailable
		}
		adminJSON(w, status, h)
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
		top, err := l.Top(r.Context(), n)
		if err != nil {
			adminError(w, r, http.StatusBadGateway, err.Error())
			return
		}
		out := make([]ConsumerJSON, len(top))
		for i, c := range top {
			out[i] = ConsumerJSON{Key: c.Key, Hits: c.Hits, TTLSeconds: Seconds(c.TTL)}
		}
		adminJSON(w, http.StatusOK, out)
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
		adminJSON(w, status, InfoJSONOf(info))
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
}

// InfoJSON is the /info answer and the JSON of `devkit ratelimit info`.
type InfoJSON struct {
	Key               string  `json:"key"`
	Exists            bool    `json:"exists"`
	Hits              int64   `json:"hits"`
	TTLSeconds        float64 `json:"ttl_seconds"`
	BlockedForSeconds float64 `json:"blocked_for_seconds"`
}

// InfoJSONOf renders a KeyInfo with durations in seconds.
func InfoJSONOf(info ratelimit.KeyInfo) InfoJSON {
	return InfoJSON{Key: info.Key, Exists: info.Exists, Hits: info.Hits,
		TTLSeconds: Seconds(info.TTL), BlockedForSeconds: Seconds(info.BlockedFor)}
}

// ConsumerJSON is one entry of /top and of `devkit ratelimit top --json`.
type ConsumerJSON struct {
	Key        string  `json:"key"`
	Hits       int64   `json:"hits"`
	TTLSeconds float64 `json:"ttl_seconds"`
}

// ResetJSON is the /reset answer and the JSON of `devkit ratelimit reset`.
type ResetJSON struct {
	Key     string `json:"key"`
	Existed bool   `json:"existed"`
}

// Seconds renders a duration as seconds for JSON; -1 for "never".
func Seconds(d time.Duration) float64 {
	if d < 0 {
		return -1
	}
	return d.Seconds()
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
