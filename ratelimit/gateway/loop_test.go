package gateway_test

// Attacks on the event loops' edges (loop_linux.go), over real sockets,
// each run in both modes (the loops, and GoroutinePerConn): what the loops
// answer themselves must be what the goroutine front answers, and what
// they hand over must reach the front whole and in order.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/ratelimit/gateway"
)

// goroutineModeEnv, set in the environment of this test binary, makes
// startGateway serve with GoroutinePerConn: TestGateway_SuiteWithGoroutinePerConn
// runs the front's suite again that way.
const goroutineModeEnv = "GATEWAY_TEST_GOROUTINE_PER_CONN"

// modes are the two ways the client front serves connections.
var modes = []struct {
	name             string
	goroutinePerConn bool
}{{"loops", false}, {"goroutines", true}}

// forEachMode runs f once per mode.
func forEachMode(t *testing.T, f func(t *testing.T, goroutinePerConn bool)) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			if !m.goroutinePerConn && runtime.GOOS != "linux" {
				t.Skip("the event loops are Linux only")
			}
			if m.goroutinePerConn && os.Getenv(onePEnv) != "" {
				t.Skip("the run with one P is the loops' (their wait on Go's poller)")
			}
			f(t, m.goroutinePerConn)
		})
	}
}

// spend uses up the one request /limited allows the local address.
func spend(t *testing.T, addr string) {
	t.Helper()
	if codes, _ := exchange(t, addr, "GET /limited HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); len(codes) != 1 || codes[0] != 200 {
		t.Fatalf("spending /limited: answers %v, want one 200", codes)
	}
}

// readAnswers reads n answers to requests of the given methods.
func readAnswers(t *testing.T, br *bufio.Reader, methods ...string) (codes []int, bodies []string) {
	t.Helper()
	for i, m := range methods {
		resp, err := http.ReadResponse(br, &http.Request{Method: m})
		if err != nil {
			t.Fatalf("answer %d: %v (got %v so far)", i, err, codes)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		codes, bodies = append(codes, resp.StatusCode), append(bodies, string(b))
	}
	return codes, bodies
}

// A pipelined burst of denials, then a request the limit lets through,
// then denials again, in one write: answered in order on one connection,
// the allowed one reaching the upstream with its fields intact (it is
// handed over mid-burst, with the bytes behind it).
func TestLoop_PipelinedDenialsThenAllowedKeepOrder(t *testing.T) {
	forEachMode(t, func(t *testing.T, gpc bool) {
		srv, up := startFrontGateway(t, gateway.Config{GoroutinePerConn: gpc})
		spend(t, srv.Addr())
		conn := dialClient(t, srv.Addr())
		var raw strings.Builder
		methods := []string{}
		for i := 0; i < 20; i++ {
			raw.WriteString("GET /limited HTTP/1.1\r\nHost: x\r\n\r\n")
			methods = append(methods, "GET")
		}
		raw.WriteString("GET /api/after HTTP/1.1\r\nHost: x\r\nX-Keep: 1\r\n\r\n")
		methods = append(methods, "GET")
		for i := 0; i < 5; i++ {
			raw.WriteString("GET /limited HTTP/1.1\r\nHost: x\r\n\r\n")
			methods = append(methods, "GET")
		}
		io.WriteString(conn, raw.String())
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		codes, bodies := readAnswers(t, bufio.NewReader(conn), methods...)
		for i, c := range codes {
			want := 429
			if i == 20 {
				want = 200
			}
			if c != want || (i == 20 && bodies[i] != "path=/api/after") {
				t.Fatalf("answer %d: %d %q, want %d (answers %v)", i, c, bodies[i], want, codes)
			}
		}
		if seen := up.seen(); len(seen) != 2 || seen[1] != "GET /api/after" {
			t.Errorf("the upstream saw %v: want the spent /limited, then GET /api/after", seen)
		}
	})
}

// A head sent a byte per write is answered as a whole one is, and the
// connection goes on.
func TestLoop_HeadSplitByteByByte(t *testing.T) {
	forEachMode(t, func(t *testing.T, gpc bool) {
		srv, _ := startFrontGateway(t, gateway.Config{GoroutinePerConn: gpc})
		spend(t, srv.Addr())
		conn := dialClient(t, srv.Addr())
		conn.(*net.TCPConn).SetNoDelay(true)
		head := "GET /limited HTTP/1.1\r\nHost: x\r\nUser-Agent: slow-but-honest\r\nAccept: */*\r\n\r\n"
		for i := 0; i < len(head); i++ {
			if _, err := conn.Write([]byte{head[i]}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond)
		}
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		br := bufio.NewReader(conn)
		if codes, _ := readAnswers(t, br, "GET"); codes[0] != 429 {
			t.Fatalf("the head sent a byte at a time: %d, want 429", codes[0])
		}
		if n := srv.LoopConns(); !gpc && n != 1 {
			// Answered, but by the goroutine front: the loop's scan of a
			// head in pieces failed and it handed the connection over.
			t.Errorf("%d connections in the loops, want this one", n)
		}
		io.WriteString(conn, "HEAD /limited HTTP/1.1\r\nHost: x\r\n\r\nGET /api/next HTTP/1.1\r\nHost: x\r\n\r\n")
		codes, bodies := readAnswers(t, br, "HEAD", "GET")
		if codes[0] != 429 || bodies[0] != "" || codes[1] != 200 || bodies[1] != "path=/api/next" {
			t.Fatalf("answers %v %q: want 429 without a body, 200 path=/api/next", codes, bodies)
		}
	})
}

// A client that pipelines denials and dies with a reset, unread answers
// and all, leaves nothing in the loops, and the next client is served.
func TestLoop_ClientThatPipelinesDenialsThenDiesLeavesNothing(t *testing.T) {
	forEachMode(t, func(t *testing.T, gpc bool) {
		srv, _ := startFrontGateway(t, gateway.Config{GoroutinePerConn: gpc})
		spend(t, srv.Addr())
		raw := strings.Repeat("GET /limited HTTP/1.1\r\nHost: x\r\n\r\n", 3000) // more answers than a socket buffer holds
		for round := 0; round < 10; round++ {
			conn, err := net.Dial("tcp", srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				io.WriteString(conn, raw)
			}()
			time.Sleep(5 * time.Millisecond)
			conn.(*net.TCPConn).SetLinger(0)
			conn.Close()
		}
		deadline := time.Now().Add(5 * time.Second)
		for srv.LoopConns() > 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := srv.LoopConns(); n > 0 {
			t.Fatalf("%d connections still in the loops after their clients died", n)
		}
		if codes, _ := exchange(t, srv.Addr(), "GET /limited HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); len(codes) != 1 || codes[0] != 429 {
			t.Fatalf("after the dead clients: %v, want one 429", codes)
		}
	})
}

// A head longer than a loop holds (16 KiB) is the front's: answered as
// the front answers it, 429 under the front's limit, 431 over it.
func TestLoop_LongHeadHandedOverWhole(t *testing.T) {
	forEachMode(t, func(t *testing.T, gpc bool) {
		srv, up := startFrontGateway(t, gateway.Config{GoroutinePerConn: gpc})
		spend(t, srv.Addr())
		long := "GET /limited HTTP/1.1\r\nHost: x\r\nX-Long: " + strings.Repeat("a", 40<<10) + "\r\n\r\n" +
			"GET /api/after-long HTTP/1.1\r\nHost: x\r\n\r\n"
		conn := dialClient(t, srv.Addr())
		io.WriteString(conn, long)
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if codes, bodies := readAnswers(t, bufio.NewReader(conn), "GET", "GET"); codes[0] != 429 || codes[1] != 200 || bodies[1] != "path=/api/after-long" {
			t.Fatalf("a 40 KiB head, then a request: %v %q, want 429 then 200", codes, bodies)
		}
		tooLong := "GET /limited HTTP/1.1\r\nHost: x\r\nX-Long: " + strings.Repeat("a", 80<<10) + "\r\n\r\n"
		if codes, closed := exchange(t, srv.Addr(), tooLong); len(codes) != 1 || codes[0] != 431 || !closed {
			t.Fatalf("an 80 KiB head: %v, closed %v: want one 431 and the connection closed", codes, closed)
		}
		if seen := up.seen(); len(seen) != 2 {
			t.Errorf("the upstream saw %v", seen)
		}
	})
}

// A slowloris that trickles a head under the denial path is cut at the
// header timeout, and an idle connection after a denial at the idle one.
func TestLoop_SlowHeadAndIdleConnectionCut(t *testing.T) {
	forEachMode(t, func(t *testing.T, gpc bool) {
		srv, _ := startFrontGateway(t, gateway.Config{GoroutinePerConn: gpc, ReadHeaderTimeout: 300 * time.Millisecond,
			IdleTimeout: time.Minute})
		spend(t, srv.Addr())
		conn := dialClient(t, srv.Addr())
		head := "GET /limited HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 100)
		start := time.Now()
		if !trickleUntilCut(conn, head) {
			t.Fatalf("a head trickled for %v was not cut (header timeout 300ms)", time.Since(start).Round(time.Millisecond))
		}
		srv, _ = startFrontGateway(t, gateway.Config{GoroutinePerConn: gpc, ReadHeaderTimeout: time.Minute,
			IdleTimeout: 400 * time.Millisecond})
		spend(t, srv.Addr())
		idle := dialClient(t, srv.Addr())
		io.WriteString(idle, "GET /limited HTTP/1.1\r\nHost: x\r\n\r\n")
		br := bufio.NewReader(idle)
		idle.SetReadDeadline(time.Now().Add(3 * time.Second))
		if codes, _ := readAnswers(t, br, "GET"); codes[0] != 429 {
			t.Fatalf("answer %v, want 429", codes)
		}
		start = time.Now()
		_, err := br.ReadByte()
		if err == nil || isTimeout(err) || time.Since(start) > 2*time.Second {
			t.Fatalf("an idle connection after %v: %v, want it closed at the idle timeout (400ms)", time.Since(start).Round(time.Millisecond), err)
		}
	})
}

// A request with a body after denials is handed over with its body; the
// denials after it are still answered, in order.
func TestLoop_HandoffWithABody(t *testing.T) {
	forEachMode(t, func(t *testing.T, gpc bool) {
		srv, up := startFrontGateway(t, gateway.Config{GoroutinePerConn: gpc})
		spend(t, srv.Addr())
		conn := dialClient(t, srv.Addr())
		io.WriteString(conn, "GET /limited HTTP/1.1\r\nHost: x\r\n\r\n"+
			"POST /api/body HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello")
		time.Sleep(50 * time.Millisecond) // the body's rest comes later
		io.WriteString(conn, " world"+"GET /limited HTTP/1.1\r\nHost: x\r\n\r\n")
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		codes, bodies := readAnswers(t, bufio.NewReader(conn), "GET", "POST", "GET")
		if codes[0] != 429 || codes[1] != 200 || bodies[1] != "path=/api/body" || codes[2] != 429 {
			t.Fatalf("answers %v %q: want 429, 200, 429", codes, bodies)
		}
		up.mu.Lock()
		body := up.body[len(up.body)-1]
		up.mu.Unlock()
		if body != "hello world" {
			t.Errorf("the upstream got the body %q, want %q", body, "hello world")
		}
	})
}

// From an untrusted peer (127.0.0.2), a spoofed X-Forwarded-For is not
// the key: every spelling of it is denied once the peer spent its limit,
// while the trusted proxy's (127.0.0.1) hops are believed.
func TestLoop_SpoofedForwardedForFromUntrustedPeerKeyedOnThePeer(t *testing.T) {
	forEachMode(t, func(t *testing.T, gpc bool) {
		upstream := httptest.NewServer(&pathRecorder{})
		t.Cleanup(upstream.Close)
		srv := startGateway(t, upstream.URL, "identity:\n  trusted_proxies: [127.0.0.1]\n"+openTestPolicy,
			gateway.Config{GoroutinePerConn: gpc, Logger: discardLogger()})
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
		conn, err := d.Dial("tcp", srv.Addr())
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("dial from 127.0.0.2 (Linux routes all of 127/8 to lo; CI=true: the test must run): %v", err)
			}
			t.Skipf("no 127.0.0.2 on this machine (macOS: sudo ifconfig lo0 alias 127.0.0.2): %v", err)
		}
		defer conn.Close()
		var raw strings.Builder
		for i := 0; i < 10; i++ {
			fmt.Fprintf(&raw, "GET /limited HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 10.1.2.%d\r\n\r\n", i)
		}
		io.WriteString(conn, raw.String())
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		codes, _ := readAnswers(t, bufio.NewReader(conn), strings.Split(strings.Repeat("GET ", 10), " ")[:10]...)
		if codes[0] != 200 {
			t.Fatalf("the peer's first request: %d, want 200", codes[0])
		}
		for i, c := range codes[1:] {
			if c != 429 {
				t.Fatalf("spoofed hop %d from an untrusted peer: %d, want 429 (answers %v)", i+1, c, codes)
			}
		}
		// From the trusted proxy, each hop is its own client: each is allowed once.
		var trusted strings.Builder
		for i := 0; i < 3; i++ {
			fmt.Fprintf(&trusted, "GET /limited HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 10.9.9.%d\r\n\r\n", i)
		}
		trusted.WriteString("GET /limited HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 10.9.9.0\r\nConnection: close\r\n\r\n")
		if codes, _ := exchange(t, srv.Addr(), trusted.String()); fmt.Sprint(codes) != "[200 200 200 429]" {
			t.Fatalf("hops from the trusted proxy: %v, want [200 200 200 429]", codes)
		}
	})
}

// dateField is the Date field of an answer, which differs by the second.
var dateField = regexp.MustCompile(`(?m)^Date: [^\r]*\r\n`)

// The loops answer a denial with the goroutine front's bytes exactly, for
// GET, HEAD, HTTP/1.0 with and without keep-alive, and Connection: close.
func TestLoop_DenialBytesSameAsTheGoroutineFront(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the event loops are Linux only")
	}
	reqs := []string{
		"GET /limited HTTP/1.1\r\nHost: x\r\n\r\n",
		"HEAD /limited HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /limited?q=1 HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n\r\n",
		"GET /limited/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		"GET /limited HTTP/1.0\r\n\r\n",
	}
	answers := map[bool][]string{}
	for _, gpc := range []bool{false, true} {
		srv, _ := startFrontGateway(t, gateway.Config{GoroutinePerConn: gpc})
		spend(t, srv.Addr())
		for _, r := range reqs {
			conn, err := net.Dial("tcp", srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(conn, r)
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			var got bytes.Buffer // the answer's bytes, as they came
			resp, err := http.ReadResponse(bufio.NewReader(io.TeeReader(conn, &got)), &http.Request{Method: strings.Fields(r)[0]})
			if err != nil {
				t.Fatalf("%q: %v", r, err)
			}
			io.Copy(io.Discard, resp.Body)
			conn.Close()
			answers[gpc] = append(answers[gpc], dateField.ReplaceAllString(got.String(), ""))
		}
	}
	for i, r := range reqs {
		loop, front := answers[false][i], answers[true][i]
		if loop != front || !strings.HasPrefix(loop, "HTTP/1.1 429 ") {
			t.Errorf("%q:\nloops:\n%s\ngoroutine front:\n%s", r, loop, front)
		}
	}
}

// The front's suite (raw-socket tests of TestFront*, TestLoop*, TestGateway*)
// runs again with GoroutinePerConn, in a child process.
func TestGateway_SuiteWithGoroutinePerConn(t *testing.T) {
	if os.Getenv(goroutineModeEnv) != "" {
		t.Skip("this is the run with GoroutinePerConn")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^Test(Front|Gateway_)", "-test.count=1")
	cmd.Env = append(os.Environ(), goroutineModeEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("PASS")) {
		t.Fatalf("the suite with GoroutinePerConn: %v\n%s", err, out)
	}
}

// onePEnv, set in the environment of this test binary, marks the runs of
// TestLoop_SuiteOnOneCPU.
const onePEnv = "GATEWAY_TEST_ONE_P"

// The loops wait in one of two ways (loop.direct): blocking in epoll_wait
// while the runtime has a P beside theirs (the spare P: the default, the
// way the rest of this suite runs), parked on Go's poller when more loops
// are asked for than there are Ps. The loop tests run again in child
// processes with GOMAXPROCS=1: with the default (one loop, and the spare
// P), and with three loops, which wait on the poller, so that both ways
// are proved on a CPU: pipelines, handoffs, slow readers, idle cuts.
func TestLoop_SuiteOnOneCPU(t *testing.T) {
	if os.Getenv(onePEnv) != "" || os.Getenv(goroutineModeEnv) != "" {
		t.Skip("this is a run with one P")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the event loops are Linux only")
	}
	for _, loops := range []string{"", "3"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLoop", "-test.count=1")
		cmd.Env = append(os.Environ(), onePEnv+"=1", "GOMAXPROCS=1", loopsEnv+"="+loops)
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("PASS")) {
			t.Fatalf("the loop suite with GOMAXPROCS=1 and %s=%q: %v\n%s", loopsEnv, loops, err, out)
		}
	}
}

// While a gateway's loops run, the runtime has one P more than before
// (the spare P), shared by every gateway of the process, and it is given
// back when the last one stops.
func TestLoop_SparePWhileTheLoopsRun(t *testing.T) {
	if runtime.GOOS != "linux" || os.Getenv(goroutineModeEnv) != "" {
		t.Skip("the event loops are Linux only, and on")
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer up.Close()
	run := func() (addr string, stop func()) {
		srv, cancel, done := serveGateway(t, up.URL, gateway.Config{})
		return srv.Addr(), stopper(t, cancel, done)
	}
	before := runtime.GOMAXPROCS(0)
	addr1, stop1 := run()
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Fatalf("GOMAXPROCS %d before any client, want %d (the loops start with the first)", got, before)
	}
	spend(t, addr1)
	if got := runtime.GOMAXPROCS(0); got != before+1 {
		t.Fatalf("GOMAXPROCS %d while the loops run, want %d", got, before+1)
	}
	addr2, stop2 := run()
	spend(t, addr2)
	if got := runtime.GOMAXPROCS(0); got != before+1 {
		t.Fatalf("GOMAXPROCS %d with two gateways' loops, want %d (one spare P)", got, before+1)
	}
	stop1()
	if got := runtime.GOMAXPROCS(0); got != before+1 {
		t.Fatalf("GOMAXPROCS %d after one of two stopped, want %d", got, before+1)
	}
	stop2()
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Fatalf("GOMAXPROCS %d after every gateway stopped, want %d back", got, before)
	}
}

// batchThreads counts this process's threads scheduled SCHED_BATCH (the
// policy, field 41 of /proc/self/task/*/stat). ended leaves the main
// thread out: a loop that ran there leaves it wedged, not ended (the
// runtime never ends the main thread, and never runs a goroutine on it
// again once a locked goroutine exited on it).
func batchThreads(t *testing.T, ended bool) int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, task := range tasks {
		stat, err := os.ReadFile("/proc/self/task/" + task.Name() + "/stat")
		if err != nil {
			continue // the thread exited
		}
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])) // from field 3, the state
		if len(f) > 38 && f[38] == "3" && (!ended || task.Name() != strconv.Itoa(os.Getpid())) {
			n++
		}
	}
	return n
}

// Each loop that blocks in epoll_wait runs on a thread of its own at
// SCHED_BATCH, so that threads woken for the requests let through run
// before the flood's answers; the policy ends with the loops (their
// threads exit) and never reaches the goroutines.
func TestLoop_ThreadsRunAsBatch(t *testing.T) {
	if runtime.GOOS != "linux" || os.Getenv(goroutineModeEnv) != "" {
		t.Skip("the event loops are Linux only, and on")
	}
	noBatch := func(when string) {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Second); batchThreads(t, true) != 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d SCHED_BATCH threads %s, want 0 (a loop's thread outlived it with its policy)", batchThreads(t, true), when)
			}
		}
	}
	noBatch("2 s after other tests' gateways stopped")
	wedged := batchThreads(t, false) // the main thread, if a loop ran there
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer up.Close()
	loops := runtime.GOMAXPROCS(0)
	srv, cancel, done := serveGateway(t, up.URL, gateway.Config{})
	stop := stopper(t, cancel, done)
	spend(t, srv.Addr())
	if n := batchThreads(t, false); n != loops+wedged {
		t.Errorf("%d SCHED_BATCH threads while %d loops run, want one per loop", n-wedged, loops)
	}
	// Denials answered on the loops, allowed requests on goroutines: no
	// other thread turns batch.
	for range 50 {
		exchange(t, srv.Addr(), "GET /limited HTTP/1.1\r\nHost: x\r\n\r\nGET /api/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	}
	if n := batchThreads(t, false); n != loops+wedged {
		t.Errorf("%d SCHED_BATCH threads after requests, want %d", n-wedged, loops)
	}
	stop()
	noBatch("2 s after the gateway stopped")
}

// A client that pipelines more denials than the socket buffers hold and
// reads them late gets every answer, in order: the loop resumes writing
// when the socket has room again.
func TestLoop_SlowReaderGetsEveryAnswer(t *testing.T) {
	forEachMode(t, func(t *testing.T, gpc bool) {
		srv, _ := startFrontGateway(t, gateway.Config{GoroutinePerConn: gpc})
		spend(t, srv.Addr())
		conn := dialClient(t, srv.Addr())
		const n = 20000 // 14 MB of answers: more than the kernel's buffers on both sides
		go io.WriteString(conn, strings.Repeat("GET /limited HTTP/1.1\r\nHost: x\r\n\r\n", n)+
			"GET /api/last HTTP/1.1\r\nHost: x\r\n\r\n")
		time.Sleep(300 * time.Millisecond) // the answers fill the buffers; the loop waits for room
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(conn)
		for i := 0; i <= n; i++ {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("answer %d of %d: %v", i, n+1, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want := 429; i < n && resp.StatusCode != want || i == n && string(b) != "path=/api/last" {
				t.Fatalf("answer %d: %d %q", i, resp.StatusCode, b)
			}
		}
	})
}
