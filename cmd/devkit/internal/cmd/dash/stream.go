package dash

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/devkit-go/devkit/cmd/devkit/internal/live"
	"github.com/devkit-go/devkit/supervisor"
)

// interruptible ends ctx on SIGINT or SIGTERM, so the server shuts down.
func interruptible(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

// index renders the page with a first snapshot, so that it shows the
// stack before its script runs (or without it).
func (h *handler) index(w http.ResponseWriter, r *http.Request) {
	snap := live.NewSampler(h.src).Sample(r.Context())
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := h.page.Execute(w, snap); err != nil {
		fmt.Fprintf(os.Stderr, "devkit dash: render: %v\n", err)
	}
}

// snapshot is one reading as JSON (what `devkit top --once --json` prints,
// without its second reading).
func (h *handler) snapshot(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(live.NewSampler(h.src).Sample(r.Context())) // the client went away
}

// sse starts an event stream.
func sse(w http.ResponseWriter) (http.Flusher, bool) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return nil, false
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	return fl, true
}

// events streams a snapshot every interval, sampled for this stream
// alone, until the client goes.
func (h *handler) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := sse(w)
	if !ok {
		return
	}
	sampler := live.NewSampler(h.src)
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		data, err := json.Marshal(sampler.Sample(r.Context()))
		if err != nil {
			return
		}
		if _, err := fmt.Fprintf(w, "event: snapshot\ndata: %s\n\n", data); err != nil {
			return
		}
		fl.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
	}
}

// logStream streams name's log, one event per line with the line's id. A
// client that gives the id of the last line it has (the Last-Event-ID
// header on an EventSource's reconnect, or ?last_event_id= after a page
// reload) gets only the lines after it.
func (h *handler) logStream(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	if err := supervisor.ValidName(name); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("last_event_id")
	}
	tail, release := h.logs.acquire(name)
	defer release()
	var after uint64
	if epoch, seq, ok := strings.Cut(last, "-"); ok && epoch == h.logs.epoch {
		after, _ = strconv.ParseUint(seq, 10, 64)
	}
	fl, ok := sse(w)
	if !ok {
		return
	}
	for {
		changed := tail.Changed()
		for _, l := range tail.Since(after) {
			data, _ := json.Marshal(l.Text) // a string always marshals
			if _, err := fmt.Fprintf(w, "id: %s-%d\ndata: %s\n\n", h.logs.epoch, l.Seq, data); err != nil {
				return
			}
			after = l.Seq
		}
		fl.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-changed:
		}
	}
}

// logHub shares one LogTail per process among the streams reading it,
// and ends it grace after the last one leaves.
type logHub struct {
	ctx   context.Context
	sup   *supervisor.Supervisor
	grace time.Duration
	// epoch names this server run in line ids: an id from another run
	// (whose line numbers mean other lines) resumes nothing.
	epoch string

	mu    sync.Mutex
	tails map[string]*sharedTail
}

type sharedTail struct {
	tail    *live.LogTail
	cancel  context.CancelFunc
	readers int
	timer   *time.Timer
}

func newLogHub(ctx context.Context, sup *supervisor.Supervisor, grace time.Duration) *logHub {
	return &logHub{ctx: ctx, sup: sup, grace: grace, epoch: strconv.FormatInt(time.Now().UnixNano(), 36), tails: map[string]*sharedTail{}}
}

// acquire returns name's tail, following it if nobody does yet; release
// gives it back.
func (hub *logHub) acquire(name string) (*live.LogTail, func()) {
	hub.mu.Lock()
	defer hub.mu.Unlock()
	st := hub.tails[name]
	if st == nil {
		ctx, cancel := context.WithCancel(hub.ctx)
		st = &sharedTail{tail: live.FollowLog(ctx, hub.sup, name, 1000), cancel: cancel}
		hub.tails[name] = st
	}
	if st.timer != nil {
		st.timer.Stop()
		st.timer = nil
	}
	st.readers++
	return st.tail, func() {
		hub.mu.Lock()
		defer hub.mu.Unlock()
		st.readers--
		if st.readers > 0 {
			return
		}
		st.timer = time.AfterFunc(hub.grace, func() {
			hub.mu.Lock()
			defer hub.mu.Unlock()
			if st.readers == 0 && hub.tails[name] == st {
				st.cancel()
				delete(hub.tails, name)
			}
		})
	}
}
