package server_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/kvstore/server"
	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
	"github.com/devkit-go/devkit/kvstore/server/tcpjson"
)

// slowSockets opens n connections to addr from the 127.0.0.x addresses
// given, each sending the start of a request and then nothing; it returns
// once all are open (accepted by the kernel).
func slowSockets(t *testing.T, addr string, n int, partial string, from ...string) {
	t.Helper()
	for i := range n {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from[i%len(from)])}, Timeout: 5 * time.Second}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("slow socket %d: %v", i, err)
		}
		t.Cleanup(func() { c.Close() })
		if partial != "" {
			io.WriteString(c, partial)
		}
	}
}

// startAll runs every listener with its default limits (RESP capped at
// 1024 connections like the others) on a fresh engine.
func startAll(t *testing.T) server.Addrs {
	t.Helper()
	db := servertest.OpenDB(t)
	return serve(t, server.New(db, server.Config{HTTPAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0", RESPAddr: "127.0.0.1:0",
		RESP: resp.Options{MaxConns: 1024}, Logger: servertest.Logger(t)}))
}

// Each probe is a legitimate client from 127.0.0.1 that must be served.
var slowlorisProbes = []struct {
	transport string
	partial   string // what each slow socket sends before going quiet
	probe     func(ctx context.Context, a server.Addrs) error
}{
	{"tcp", `{"op":"get","key":"`, func(ctx context.Context, a server.Addrs) error {
		c, err := tcpjson.Dial(ctx, a.TCP)
		if err != nil {
			return err
		}
		defer c.Close()
		return c.Ping(ctx)
	}},
	{"resp", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100\r\nabc", func(ctx context.Context, a server.Addrs) error {
		c := redis.NewClient(&redis.Options{Addr: a.RESP, MaxRetries: -1, DialTimeout: time.Second})
		defer c.Close()
		return c.Ping(ctx).Err()
	}},
	{"http", "GET /keys/k HTTP/1.1\r\nHost: x\r\n", func(ctx context.Context, a server.Addrs) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+a.HTTP+"/health", nil)
		tr := &http.Transport{DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		res, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		if res.StatusCode != 200 {
			return fmt.Errorf("status %s", res.Status)
		}
		return nil
	}},
}

// probeWithin retries the probe until it succeeds or the bound runs out.
func probeWithin(t *testing.T, bound time.Duration, a server.Addrs, probe func(context.Context, server.Addrs) error) {
	t.Helper()
	start := time.Now()
	var err error
	for time.Since(start) < bound {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = probe(ctx, a)
		cancel()
		if err == nil {
			t.Logf("served after %v", time.Since(start).Round(time.Millisecond))
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("a client from 127.0.0.1 was locked out for %v: %v", bound, err)
}

func TestSlowloris_OneAddressCannotLockATransportOut(t *testing.T) {
	for _, p := range slowlorisProbes {
		t.Run(p.transport, func(t *testing.T) {
			a := startAll(t)
			addr := map[string]string{"tcp": a.TCP, "resp": a.RESP, "http": a.HTTP}[p.transport]
			slowSockets(t, addr, 1024, p.partial, "127.0.0.2")
			probeWithin(t, 2*time.Second, a, p.probe)
		})
	}
}

func TestSlowloris_ManyAddressesCannotLockATransportOut(t *testing.T) {
	var from []string
	for i := 2; i < 18; i++ {
		from = append(from, fmt.Sprintf("127.0.0.%d", i))
	}
	for _, p := range slowlorisProbes {
		t.Run(p.transport, func(t *testing.T) {
			a := startAll(t)
			addr := map[string]string{"tcp": a.TCP, "resp": a.RESP, "http": a.HTTP}[p.transport]
			slowSockets(t, addr, 1024, p.partial, from...)
			probeWithin(t, 2*time.Second, a, p.probe)
		})
	}
}

var _ = strings.Repeat
