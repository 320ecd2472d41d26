package gateway

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// deadlineRecorder counts the write deadlines set through it.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	set int
}

func (w *deadlineRecorder) SetWriteDeadline(time.Time) error { w.set++; return nil }

// TestIdleWriter_OneDeadlinePerQuickAnswer: an answer written at once (a
// denial: the head, the body, the handler returns) moves the connection's
// write deadline once, not once more when the handler returns; the
// writer and its ResponseController are one allocation. Before: two
// deadlines and two allocations.
func TestIdleWriter_OneDeadlinePerQuickAnswer(t *testing.T) {
	w := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	iw := newIdleWriter(w, time.Minute)
	iw.WriteHeader(http.StatusTooManyRequests)
	iw.Write([]byte("{}"))
	iw.done()
	if w.set != 1 {
		t.Errorf("%d write deadlines set, want 1", w.set)
	}
	var sink *idleWriter
	if n := testing.AllocsPerRun(100, func() { sink = newIdleWriter(w, time.Minute) }); n != 1 {
		t.Errorf("newIdleWriter: %v allocations, want 1", n)
	}
	_ = sink
}
