package middleware

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
)

// NewAdmin returns the inspection API of a limiter, to be served on an
// address clients cannot reach (so that nobody resets their own limits):
//
//	GET  /metrics           counters per rule, Prometheus text format
//	GET  /health            store ping and latency (503 when unreachable)
//	GET  /top?n=10          identities with the most hits
//	GET  /info?key=K        stored state of one identity
//	POST /reset?key=K       delete one identity's state
func NewAdmin(l *ratelimit.Limiter) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		l.Stats().WritePrometheus(w)
	})
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		took, err := l.Health(ctx)
		h := Health{OK: err == nil, LatencyMicros: took.Microseconds()}
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
			if err != nil || v < 1 {
				http.Error(w, "n must be a positive integer", http.StatusBadRequest)
				return
			}
			n = v
		}
		top, err := l.Top(r.Context(), n)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
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
			http.Error(w, "key is required", http.StatusBadRequest)
			return
		}
		info, err := l.Store().Info(r.Context(), key)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
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
			http.Error(w, "key is required", http.StatusBadRequest)
			return
		}
		had, err := l.Reset(r.Context(), key)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		adminJSON(w, http.StatusOK, map[string]any{"key": key, "existed": had})
	})
	return mux
}

// Health is the /health answer.
type Health struct {
	OK            bool   `json:"ok"`
	LatencyMicros int64  `json:"latency_us"`
	Error         string `json:"error,omitempty"`
}

func adminJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}
