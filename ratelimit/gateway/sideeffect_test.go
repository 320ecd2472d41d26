package gateway_test

import (
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/devkit-go/devkit/ratelimit/gateway"
)

// A gateway is a library: starting one, serving requests (allowed and
// denied) and stopping it leaves GOMAXPROCS as the program had it. The
// gateway's event loops raised it by one while they ran and wrote back
// the value they saw at Stop, overwriting the program's own setting (and
// turning off the runtime's automatic, container-aware updates).
func TestGateway_StartAndStopLeaveGOMAXPROCSAlone(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	upstream := httptest.NewServer(&recorder{})
	t.Cleanup(upstream.Close)
	srv, cancel, done := serveGateway(t, upstream.URL, gateway.Config{})
	for range 3 {
		// One let through, then denials (which the event loops answered).
		exchange(t, srv.Addr(), "GET /limited HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	}
	during := runtime.GOMAXPROCS(0)
	stopper(t, cancel, done)()
	if after := runtime.GOMAXPROCS(0); during != before || after != before {
		t.Errorf("GOMAXPROCS %d before, %d while serving, %d after: want it untouched", before, during, after)
	}
}
