//go:build linux

package gateway_test

// The upper bound of a hand-written HTTP/1.1 front on the 429 flood: a
// responder that does no parsing and no limiting — it finds the end of each
// request head and writes fixed bytes — so no real front, which must parse
// and count, can answer faster. Issue 23 keeps a hand-written front only if
// it measures ≥ 1.5× net/http at 50 and at 1,000 connections; if this bound
// is below that, none can.
//
//	go test -run '^$' -bench '^BenchmarkRejectionHandWrittenCeilingVsNetHTTP$' -benchtime 3x ./gateway

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/memory"
)

// BenchmarkRejectionHandWrittenCeilingVsNetHTTP runs, in rotating order
// under the same wrk load (two threads, 50 and 1,000 connections), a bare
// net/http server answering every request with the gateway's 429, nginx
// limit_req, and responders writing the very bytes that server writes:
// two minimal ones (one goroutine per connection on a raw net.Conn; epoll
// loops, one per P, via x/sys/unix), whose faster per round is "ceiling";
// minimal-limiter, which also checks the limiter per request; and
// lean-parse-limiter, which also checks the head's form (the least a real
// front adds). It reports each one's median requests/s and the median
// ratios to net/http and to nginx, and each server's CPU per answer (the
// scheduler's account of this process, or of nginx, during its turns):
// steadier than throughput on a loaded machine.
func BenchmarkRejectionHandWrittenCeilingVsNetHTTP(b *testing.B) {
	up := upstreamServer(b)
	gw := benchGateway(b, up.URL, closedPolicy)
	header, body := gatewayDenial(b, "http://"+gw.Addr()+"/x")
	h := header.Clone()
	h.Del("Date")
	nethttp := bareNetHTTP(b, fixedDenial(h, body))
	resp := rawResponse(b, nethttp[len("http://"):])
	servers := []struct{ name, target string }{
		{"nethttp", nethttp},
		{"minimal-goroutine", minimalGoroutineResponder(b, resp, nil)},
		{"minimal-epoll", minimalEpollResponder(b, resp)},
		{"minimal-limiter", minimalGoroutineResponder(b, resp, denyAll(b))},
		{"lean-parse-limiter", leanParseResponder(b, resp, denyAll(b))},
	}
	for _, s := range servers[1:] { // same bytes on the wire as net/http's (its Date aside, same length)
		if got := rawResponse(b, s.target[len("http://"):]); len(got) != len(resp) {
			b.Fatalf("%s answers %d bytes, net/http %d", s.name, len(got), len(resp))
		}
	}
	for _, conns := range []int{50, 1000} {
		b.Run(fmt.Sprintf("conns=%d", conns), func(b *testing.B) {
			nginx, nginxPID := startNginx(b, up.URL, "")
			if r, err := benchClient().Get(nginx + "/x"); err == nil { // nginx's one allowed request
				r.Body.Close()
			}
			all := append(servers[:len(servers):len(servers)], struct{ name, target string }{"nginx", nginx})
			wrk := driveWrkConns(2, conns)
			rps := make(map[string][]float64)
			cpu, n := make(map[string]float64), make(map[string]float64) // CPU seconds and answers over all turns
			b.ResetTimer()
			for round := range max(b.N, 1) {
				for i := range all { // rotate who goes first, to spread the order's bias
					s := all[(round+i)%len(all)]
					pid := os.Getpid() // the others idle while one server takes its turn
					if s.name == "nginx" {
						pid = nginxPID
					}
					before := processRuntime(pid)
					r, answers, _ := wrk(b, s.target+"/x", http.StatusTooManyRequests)
					rps[s.name] = append(rps[s.name], r)
					cpu[s.name] += (processRuntime(pid) - before).Seconds()
					n[s.name] += answers
				}
			}
			b.StopTimer()
			// The ceiling is the faster minimal responder in each round: neither
			// loop won consistently in the runs of this benchmark.
			for i := range rps["nethttp"] {
				rps["ceiling"] = append(rps["ceiling"], max(rps["minimal-goroutine"][i], rps["minimal-epoll"][i]))
			}
			for _, s := range all {
				b.ReportMetric(median(rps[s.name]), s.name+"-req/s")
				if cpu[s.name] > 0 {
					b.ReportMetric(cpu[s.name]/n[s.name]*1e6, s.name+"-run-µs/req")
				}
			}
			for _, m := range []string{"ceiling", "minimal-goroutine", "minimal-epoll", "minimal-limiter", "lean-parse-limiter"} {
				var vsHTTP, vsNginx []float64
				for i := range rps[m] {
					vsHTTP = append(vsHTTP, rps[m][i]/rps["nethttp"][i])
					vsNginx = append(vsNginx, rps[m][i]/rps["nginx"][i])
				}
				b.ReportMetric(median(vsHTTP), m+"/nethttp")
				if m != "ceiling" && cpu[m] > 0 { // how many of its answers net/http's CPU per answer pays for
					b.ReportMetric(cpu["nethttp"]/n["nethttp"]/(cpu[m]/n[m]), "nethttp-cpu/"+m+"-cpu")
				}
				b.ReportMetric(median(vsNginx), m+"/nginx")
			}
			var vsNginx []float64
			for i := range rps["nethttp"] {
				vsNginx = append(vsNginx, rps["nethttp"][i]/rps["nginx"][i])
			}
			b.ReportMetric(median(vsNginx), "nethttp/nginx")
			if load, err := strconv.ParseFloat(loadAverage(), 64); err == nil {
				b.ReportMetric(load, "loadavg")
			}
		})
	}
}

// denyAll is the limiter's share of a denial, as the gateway's benchmarks
// configure it (memory store, blocked cache): a check of one request
// against closedPolicy's limit (1 an hour), which must deny.
func denyAll(b *testing.B) func(key string) {
	l := ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{BlockedCacheSize: 100_000})
	limits := []ratelimit.Limit{{Name: "api", Algorithm: ratelimit.FixedWindow, Rate: 1, Period: time.Hour}}
	check := func(key string) (bool, error) {
		req := ratelimit.Request{Key: key, Limits: limits, Cost: 1, Rule: "api"}
		var res ratelimit.Result
		err := l.CheckInto(context.Background(), &req, &res)
		return res.Allowed, err
	}
	if _, err := check("api:127.0.0.1"); err != nil { // the one allowed request of the bench's only client address
		b.Fatal(err)
	}
	return func(key string) {
		if allowed, err := check(key); allowed || err != nil {
			panic(fmt.Sprintf("limiter on %s: allowed=%v err=%v, want a denial", key, allowed, err))
		}
	}
}

// rawResponse sends one GET to addr and returns the response's bytes as
// they came on the wire: head and body (by its Content-Length).
func rawResponse(b *testing.B, addr string) []byte {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /x HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
		b.Fatal(err)
	}
	var raw bytes.Buffer
	resp, err := http.ReadResponse(bufio.NewReader(io.TeeReader(c, &raw)), nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		b.Fatal(err)
	}
	if resp.StatusCode != http.StatusTooManyRequests {
		b.Fatalf("%s: status %d", addr, resp.StatusCode)
	}
	// The bufio.Reader may read ahead of the body; nothing follows one answer.
	return raw.Bytes()
}

// headEnds counts the request heads that end ("\r\n\r\n") in p, carrying
// how much of the terminator was matched across reads in *state. It is
// all the parsing the minimal responders do (no bodies: wrk sends GETs).
func headEnds(p []byte, state *int) int {
	n, s := 0, *state
	for _, c := range p {
		switch {
		case c == '\r' && (s == 0 || s == 2):
			s++
		case c == '\n' && (s == 1 || s == 3):
			s++
			if s == 4 {
				n, s = n+1, 0
			}
		case c == '\r':
			s = 1
		default:
			s = 0
		}
	}
	*state = s
	return n
}

// answers is resp repeated n times (one write for a pipelined batch).
func answers(resp []byte, n int, buf []byte) []byte {
	if n == 1 {
		return resp
	}
	buf = buf[:0]
	for range n {
		buf = append(buf, resp...)
	}
	return buf
}

// goroutineResponder serves each connection accepted on a free
// 127.0.0.1 port with serve, in a goroutine of its own, until the
// benchmark ends, and returns its URL.
func goroutineResponder(b *testing.B, serve func(c net.Conn)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// minimalGoroutineResponder answers every request head on a connection
// with resp, reading the raw net.Conn; with decide, it first calls decide
// once per head (the limiter's share).
func minimalGoroutineResponder(b *testing.B, resp []byte, decide func(key string)) string {
	return goroutineResponder(b, func(c net.Conn) {
		in, out := make([]byte, 4096), make([]byte, 0, len(resp))
		state := 0
		key := "api:" + c.RemoteAddr().(*net.TCPAddr).IP.String() // closedPolicy's key: [ip]
		for {
			n, err := c.Read(in)
			if k := headEnds(in[:n], &state); k > 0 {
				for range k {
					if decide != nil {
						decide(key)
					}
				}
				if _, werr := c.Write(answers(resp, k, out)); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	})
}

// leanParseResponder is minimalGoroutineResponder with the least a real
// front must add: it frames each head in a per-connection buffer, checks
// the request line and every header line's form, finds Host and the
// framing fields (case-insensitively), and checks the limiter. It still
// writes fixed bytes (a real front formats a Date and the rate-limit
// fields per response).
func leanParseResponder(b *testing.B, resp []byte, decide func(key string)) string {
	return goroutineResponder(b, func(c net.Conn) {
		key := "api:" + c.RemoteAddr().(*net.TCPAddr).IP.String()
		buf, out := make([]byte, 0, 8192), make([]byte, 0, len(resp))
		for {
			if len(buf) == cap(buf) {
				return // a head over 8 KiB: 431 in a real front
			}
			n, err := c.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
			out = out[:0]
			for {
				end := bytes.Index(buf, []byte("\r\n\r\n"))
				if end < 0 {
					break
				}
				if _, ok := leanHead(buf[:end]); !ok {
					return // 400 in a real front
				}
				decide(key)
				out = append(out, resp...)
				buf = buf[:copy(buf, buf[end+4:])]
			}
			if len(out) > 0 {
				if _, werr := c.Write(out); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	})
}

// leanHead checks the form of an HTTP/1.1 request head (without its final
// CRLFCRLF) and returns its Host; ok is false where a real front answers
// 400 (or would have to read a body, which this one does not).
func leanHead(head []byte) (host string, ok bool) {
	line, rest, _ := bytes.Cut(head, []byte("\r\n"))
	method, line, ok1 := bytes.Cut(line, []byte(" "))
	target, version, ok2 := bytes.Cut(line, []byte(" "))
	if !ok1 || !ok2 || len(method) == 0 || len(target) == 0 || target[0] != '/' || string(version) != "HTTP/1.1" {
		return "", false
	}
	for len(rest) > 0 {
		line, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		name, value, found := bytes.Cut(line, []byte(":"))
		if !found || len(name) == 0 || bytes.ContainsAny(name, " \t") {
			return "", false
		}
		value = bytes.Trim(value, " \t")
		switch {
		case bytes.EqualFold(name, []byte("Host")):
			if host != "" {
				return "", false
			}
			host = string(value)
		case bytes.EqualFold(name, []byte("Content-Length")), bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return "", false
		}
	}
	return host, host != ""
}

// minimalEpollResponder answers every request head with resp from
// GOMAXPROCS epoll loops (edge-triggered, non-blocking reads until
// EAGAIN); connections are accepted through the Go listener and handed to
// the loops round robin as duplicated descriptors.
func minimalEpollResponder(b *testing.B, resp []byte) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	loops := make([]int, runtime.GOMAXPROCS(0))
	for i := range loops {
		if loops[i], err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
			b.Fatal(err)
		}
	}
	stop, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{}, len(loops))
	for _, ep := range loops {
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, stop, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(stop)}); err != nil {
			b.Fatal(err)
		}
		go func() { epollLoop(ep, stop, resp); done <- struct{}{} }()
	}
	b.Cleanup(func() {
		ln.Close()
		unix.Write(stop, []byte{1, 0, 0, 0, 0, 0, 0, 0})
		for range loops {
			<-done
		}
		for _, ep := range loops {
			unix.Close(ep)
		}
		unix.Close(stop)
	})
	go func() {
		for next := 0; ; next++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fd, err := dupFD(c.(*net.TCPConn))
			c.Close() // the duplicate keeps the socket open, and non-blocking
			if err != nil {
				continue
			}
			ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(fd)}
			if unix.EpollCtl(loops[next%len(loops)], unix.EPOLL_CTL_ADD, fd, &ev) != nil {
				unix.Close(fd)
			}
		}
	}()
	return "http://" + ln.Addr().String()
}

func dupFD(c *net.TCPConn) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd, derr := -1, error(nil)
	if err := rc.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	return fd, derr
}

// epollLoop serves the connections registered on ep until stop is readable.
func epollLoop(ep, stop int, resp []byte) {
	events := make([]unix.EpollEvent, 256)
	in, out := make([]byte, 4096), make([]byte, 0, len(resp))
	states := make(map[int32]int)
	for {
		n, err := unix.EpollWait(ep, events, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		for _, ev := range events[:n] {
			fd := int(ev.Fd)
			if fd == stop {
				for fd := range states {
					unix.Close(int(fd))
				}
				return
			}
			state, closed := states[ev.Fd], false
			for {
				r, err := unix.Read(fd, in)
				if r > 0 {
					if k := headEnds(in[:r], &state); k > 0 {
						out = answers(resp, k, out)
						if _, werr := unix.Write(fd, out); werr != nil {
							closed = true
							break
						}
					}
					continue
				}
				closed = r == 0 || !errors.Is(err, unix.EAGAIN)
				break
			}
			if closed {
				delete(states, ev.Fd)
				unix.Close(fd)
				continue
			}
			states[ev.Fd] = state
		}
	}
}
