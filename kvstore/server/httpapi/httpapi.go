// Package httpapi is the engine's HTTP API as an http.Handler of its own:
//
//	PUT    /keys/{key}                 store the body as the value   204
//	GET    /keys/{key}                 the value, raw bytes          200, 404
//	HEAD   /keys/{key}                 the same headers, no body     200, 404
//	DELETE /keys/{key}                 remove the key                204, 404
//	GET    /keys?prefix=&after=&limit= a JSON page of keys           200
//	GET    /health                     open and writable?            200, 503
//	GET    /metrics                    Prometheus text; JSON with Accept: application/json
//
// Keys are path-escaped (a key may hold "/", written as is or as %2F).
// With Options.Token set, every request but /health must carry
// "Authorization: Bearer <token>" (else 401 with WWW-Authenticate).
// Errors are JSON {"error": "...", "code": "..."}; 405 carries Allow.
//
// Invariant: a PUT or DELETE is answered 204 only after the engine
// acknowledged the write under its sync policy, and a body is never read
// past MaxValueBytes+1 bytes: a larger one is refused with 413 from its
// Content-Length, or at the first byte over the limit.
package httpapi

import (
	"bytes"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/backend"
	"github.com/devkit-go/devkit/kvstore/server/metrics"
)

// Defaults of Options.
const (
	DefaultMaxScanLimit = 10000
)

// Error codes beyond the engine's (see package backend).
const (
	CodeMethodNotAllowed = "method_not_allowed"
	CodeNotFoundRoute    = "no_route"
	CodeBodyTooLarge     = "value_too_large"
	CodeUnavailable      = "unavailable"
	CodeUnauthorized     = "unauthorized"
)

// Options configure a Handler.
type Options struct {
	// MaxValueBytes bounds a PUT body; kvstore.DefaultMaxValueSize when
	// zero. Set it to the engine's MaxValueSize.
	MaxValueBytes int
	// MaxKeyBytes bounds keys before the body is read; kvstore.DefaultMaxKeySize
	// when zero. Set it to the engine's MaxKeySize.
	MaxKeyBytes int
	// MaxScanLimit caps the limit of GET /keys. 10000 when zero.
	MaxScanLimit int
	// Token, when set, is the bearer token every request but /health must
	// carry in its Authorization header.
	Token string
	// Metrics counts requests and serves /metrics; when nil the Handler
	// makes its own.
	Metrics *metrics.Metrics
	Logger  *slog.Logger
}

// Handler serves the API over a store.
type Handler struct {
	store    backend.Store
	opts     Options
	metrics  *metrics.Metrics
	promText http.Handler
	draining atomic.Bool
	bufs     sync.Pool // *bytes.Buffer for PUT bodies; the engine copies values
}

// New returns the API over store.
func New(store backend.Store, opts Options) *Handler {
	if opts.MaxValueBytes <= 0 {
		opts.MaxValueBytes = kvstore.DefaultMaxValueSize
	}
	if opts.MaxKeyBytes <= 0 {
		opts.MaxKeyBytes = kvstore.DefaultMaxKeySize
	}
	if opts.MaxScanLimit <= 0 {
		opts.MaxScanLimit = DefaultMaxScanLimit
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Metrics == nil {
		opts.Metrics = metrics.New(store)
	}
	h := &Handler{store: store, opts: opts, metrics: opts.Metrics}
	h.promText = promhttp.HandlerFor(opts.Metrics.Registry(), promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(opts.Logger.Handler(), slog.LevelError)})
	h.bufs.New = func() any { return new(bytes.Buffer) }
	return h
}

// SetDraining makes /health answer 503 while the server shuts down, so that
// load balancers stop sending traffic before the listeners close.
func (h *Handler) SetDraining(draining bool) { h.draining.Store(draining) }

// errorBody is every error's JSON body.
type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorBody{Error: msg, Code: code}) // the status is sent; a failed body write means the client left
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the status is sent; a failed body write means the client left
}

// writeEngineError maps an engine error to a status and body.
func writeEngineError(w http.ResponseWriter, err error) {
	code := backend.Code(err)
	status := http.StatusInternalServerError
	switch code {
	case backend.CodeNotFound:
		status = http.StatusNotFound
	case backend.CodeWrongType:
		status = http.StatusConflict // the key holds a collection: RESP reads it
	case backend.CodeEmptyKey, backend.CodeKeyTooLarge:
		status = http.StatusBadRequest
	case backend.CodeValueTooLarge:
		status = http.StatusRequestEntityTooLarge
	case backend.CodeReadOnly, backend.CodeClosed:
		status = http.StatusServiceUnavailable
	}
	writeError(w, status, code, err.Error())
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	writeError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed,
		fmt.Sprintf("method %s not allowed on %s (allowed: %s)", r.Method, r.URL.Path, allow))
}

// readOnly reports whether r may read a GET/HEAD-only route; otherwise it
// has answered 405 naming the allowed methods.
func readOnly(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	methodNotAllowed(w, r, "GET, HEAD")
	return false
}

// ServeHTTP routes a request; a panic becomes a 500 with a JSON body.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w}
	op := metrics.OpOther
	defer func() {
		if p := recover(); p != nil {
			if err, ok := p.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(p) // net/http's way to abort a response: not ours to turn into a 500
			}
			h.opts.Logger.Error("request panicked", "transport", "http", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p))
			if !rec.wrote {
				writeError(rec, http.StatusInternalServerError, backend.CodeInternal, "internal error")
			}
		}
		h.metrics.Request(metrics.HTTP, op, start, rec.status >= 400)
	}()
	op = h.route(rec, r)
}

// authorized checks the bearer token in constant time.
func (h *Handler) authorized(r *http.Request) bool {
	if h.opts.Token == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(h.opts.Token)) == 1
}

func (h *Handler) route(w http.ResponseWriter, r *http.Request) metrics.Op {
	path := r.URL.EscapedPath()
	if path != "/health" && !h.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="devkit-kv"`)
		writeError(w, http.StatusUnauthorized, CodeUnauthorized, "missing or wrong bearer token: send Authorization: Bearer <token>")
		return metrics.OpOther
	}
	switch {
	case strings.HasPrefix(path, "/keys/"):
		return h.serveKey(w, r, strings.TrimPrefix(path, "/keys/"))
	case path == "/keys":
		if readOnly(w, r) {
			h.listKeys(w, r)
		}
		return metrics.OpScan
	case path == "/health":
		if readOnly(w, r) {
			h.health(w)
		}
		return metrics.OpPing
	case path == "/metrics":
		if readOnly(w, r) {
			h.serveMetrics(w, r)
		}
		return metrics.OpStats
	default:
		writeError(w, http.StatusNotFound, CodeNotFoundRoute, fmt.Sprintf("no route %s (see /keys/{key}, /keys, /health, /metrics)", r.URL.Path))
		return metrics.OpOther
	}
}

func (h *Handler) serveKey(w http.ResponseWriter, r *http.Request, escaped string) metrics.Op {
	op := metrics.OpOther
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		op = metrics.OpGet
	case http.MethodPut:
		op = metrics.OpSet
	case http.MethodDelete:
		op = metrics.OpDelete
	default:
		methodNotAllowed(w, r, "GET, HEAD, PUT, DELETE")
		return op
	}
	key, err := url.PathUnescape(escaped)
	switch {
	case err != nil:
		writeError(w, http.StatusBadRequest, backend.CodeBadRequest, "bad key escape: "+err.Error())
		return op
	case key == "":
		writeError(w, http.StatusBadRequest, backend.CodeEmptyKey, "empty key: use /keys/{key}")
		return op
	case len(key) > h.opts.MaxKeyBytes:
		writeError(w, http.StatusBadRequest, backend.CodeKeyTooLarge,
			fmt.Sprintf("key of %d bytes, the limit is %d", len(key), h.opts.MaxKeyBytes))
		return op
	}
	switch op {
	case metrics.OpGet:
		h.get(w, r, []byte(key))
	case metrics.OpSet:
		h.put(w, r, []byte(key))
	case metrics.OpDelete:
		h.delete(w, []byte(key))
	}
	return op
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request, key []byte) {
	buf := h.bufs.Get().(*bytes.Buffer)
	defer h.putBuf(buf)
	v, err := h.store.GetAppend(buf.AvailableBuffer(), key)
	if cap(v) > buf.Cap() {
		*buf = *bytes.NewBuffer(v[:0]) // keep the larger buffer for the next request
	}
	if err != nil {
		writeEngineError(w, err)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "application/octet-stream")
	hdr.Set("Content-Length", strconv.Itoa(len(v)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(v)
	}
}

func (h *Handler) put(w http.ResponseWriter, r *http.Request, key []byte) {
	limit := int64(h.opts.MaxValueBytes)
	if r.ContentLength > limit {
		h.tooLarge(w, r.ContentLength)
		return
	}
	buf := h.bufs.Get().(*bytes.Buffer)
	defer h.putBuf(buf)
	buf.Reset()
	if r.ContentLength > 0 {
		// Memory follows the bytes that arrive, not the length announced.
		buf.Grow(int(min(r.ContentLength, 64<<10)))
	}
	n, err := buf.ReadFrom(io.LimitReader(r.Body, limit+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, backend.CodeBadRequest, "reading the body: "+err.Error())
		return
	}
	if n > limit {
		h.tooLarge(w, -1)
		return
	}
	if err := h.store.Set(key, buf.Bytes()); err != nil {
		writeEngineError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// putBuf returns a body buffer to the pool unless it grew past 1 MiB, so
// one large value does not pin its memory.
func (h *Handler) putBuf(buf *bytes.Buffer) {
	if buf.Cap() <= 1<<20 {
		h.bufs.Put(buf)
	}
}

func (h *Handler) tooLarge(w http.ResponseWriter, size int64) {
	msg := fmt.Sprintf("value larger than the limit of %d bytes", h.opts.MaxValueBytes)
	if size >= 0 {
		msg = fmt.Sprintf("value of %d bytes, the limit is %d", size, h.opts.MaxValueBytes)
	}
	// The rest of the body is not read: close the connection after the reply.
	w.Header().Set("Connection", "close")
	writeError(w, http.StatusRequestEntityTooLarge, CodeBodyTooLarge, msg)
}

// delete removes the key: 204 when this request removed it, 404 when it
// was not there (of concurrent deletes of one key exactly one gets 204).
func (h *Handler) delete(w http.ResponseWriter, key []byte) {
	var found bool
	err := h.store.Update(func(tx *kvstore.Tx) error {
		var err error
		found, err = tx.Delete(key)
		return err
	})
	if err != nil {
		writeEngineError(w, err)
		return
	}
	if !found {
		writeEngineError(w, fmt.Errorf("%w: %q", kvstore.ErrNotFound, key))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// KeysPage is the body of GET /keys. With encoding=base64 the keys and the
// cursor are base64 (standard, padded); otherwise they are strings, and a
// page holding a key that is not valid UTF-8 is refused with 400 and code
// "binary_key" rather than mangled.
type KeysPage struct {
	Keys []string `json:"keys"`
	// Next is the cursor to pass as after for the next page; absent on the last.
	Next     *string `json:"next,omitempty"`
	Encoding string  `json:"encoding,omitempty"`
}

func (h *Handler) listKeys(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	enc := q.Get("encoding")
	if enc != "" && enc != "base64" {
		writeError(w, http.StatusBadRequest, backend.CodeBadRequest, fmt.Sprintf("encoding %q: want base64 or nothing", enc))
		return
	}
	decode := func(name string) ([]byte, bool) {
		v := q.Get(name)
		if enc != "base64" {
			return []byte(v), true
		}
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, backend.CodeBadRequest, fmt.Sprintf("%s: bad base64: %v", name, err))
			return nil, false
		}
		return b, true
	}
	prefix, ok := decode("prefix")
	if !ok {
		return
	}
	after, ok := decode("after")
	if !ok {
		return
	}
	limit := min(kvstore.DefaultScanLimit, h.opts.MaxScanLimit)
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, backend.CodeBadRequest, fmt.Sprintf("limit %q: want a positive integer", s))
			return
		}
		limit = min(n, h.opts.MaxScanLimit)
	}
	page, err := h.store.Scan(kvstore.ScanOptions{Prefix: prefix, After: after, Limit: limit})
	if err != nil {
		writeEngineError(w, err)
		return
	}
	out := KeysPage{Keys: make([]string, len(page.Entries)), Encoding: enc}
	text := func(b []byte) (string, bool) {
		if enc == "base64" {
			return base64.StdEncoding.EncodeToString(b), true
		}
		return string(b), utf8.Valid(b)
	}
	for i, e := range page.Entries {
		s, ok := text(e.Key)
		if !ok {
			writeError(w, http.StatusBadRequest, "binary_key", fmt.Sprintf("key %q is not valid UTF-8: ask with encoding=base64", e.Key))
			return
		}
		out.Keys[i] = s
	}
	if page.Next != nil {
		s, _ := text(page.Next)
		out.Next = &s
	}
	writeJSON(w, http.StatusOK, out)
}

// Health is the body of GET /health.
type Health struct {
	Status string `json:"status"` // ok, read_only or draining
	Reason string `json:"reason,omitempty"`
	Keys   int64  `json:"keys"`
}

func (h *Handler) health(w http.ResponseWriter) {
	st := h.store.Stats()
	switch {
	case h.draining.Load():
		writeJSON(w, http.StatusServiceUnavailable, Health{Status: "draining", Reason: "the server is shutting down", Keys: st.Keys})
	case st.ReadOnly:
		writeJSON(w, http.StatusServiceUnavailable, Health{Status: "read_only", Reason: st.ReadOnlyReason, Keys: st.Keys})
	default:
		writeJSON(w, http.StatusOK, Health{Status: "ok", Keys: st.Keys})
	}
}

func (h *Handler) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if wantsJSON(r.Header.Get("Accept")) {
		writeJSON(w, http.StatusOK, h.metrics.Snapshot())
		return
	}
	h.promText.ServeHTTP(w, r)
}

// wantsJSON reports whether an Accept header prefers application/json.
func wantsJSON(accept string) bool {
	for part := range strings.SplitSeq(accept, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err == nil && mt == "application/json" {
			return true
		}
	}
	return false
}

// statusRecorder remembers the status written, for metrics and for the
// panic handler.
type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if !s.wrote {
		s.status, s.wrote = http.StatusOK, true
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
