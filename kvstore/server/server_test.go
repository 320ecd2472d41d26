package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server"
	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/tcpjson"
)

func TestServer_AllListenersShareOneEngineAndMetrics(t *testing.T) {
	db := servertest.OpenDB(t)
	srv := server.New(db, server.Config{HTTPAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0", RESPAddr: "127.0.0.1:0", Logger: servertest.Logger(t)})
	if err := srv.Listen(context.Background()); err != nil {
		t.Fatal(err)
	}
	addrs := srv.Addrs()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()

	req, _ := http.NewRequest(http.MethodPut, "http://"+addrs.HTTP+"/keys/from-http", strings.NewReader("1"))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 204 {
		t.Fatalf("PUT: %v %v", resp, err)
	}
	tc, err := tcpjson.Dial(ctx, addrs.TCP)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	if v, err := tc.Get(ctx, []byte("from-http")); err != nil || string(v) != "1" {
		t.Fatalf("TCP GET = %q, %v", v, err)
	}
	rc := redis.NewClient(&redis.Options{Addr: addrs.RESP})
	defer rc.Close()
	if v, err := rc.Get(ctx, "from-http").Result(); err != nil || v != "1" {
		t.Fatalf("RESP GET = %q, %v", v, err)
	}
	snap := srv.Metrics().Snapshot()
	for _, tr := range []string{"http", "tcp", "resp"} {
		if snap.Transports[tr].Requests["get"]+snap.Transports[tr].Requests["set"] == 0 {
			t.Errorf("no requests counted on %s: %+v", tr, snap.Transports[tr])
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve = %v, want nil after a clean drain", err)
	}
	for _, a := range []string{addrs.HTTP, addrs.TCP, addrs.RESP} {
		if c, err := net.Dial("tcp", a); err == nil {
			c.Close()
			t.Errorf("%s still accepts after shutdown", a)
		}
	}
}

func TestServer_ListenFailsCleanlyWhenAnAddressIsTaken(t *testing.T) {
	taken := servertest.Listen(t)
	defer taken.Close()
	srv := server.New(servertest.OpenDB(t), server.Config{HTTPAddr: "127.0.0.1:0", TCPAddr: taken.Addr().String(), Logger: servertest.Logger(t)})
	err := srv.Listen(context.Background())
	if err == nil || !strings.Contains(err.Error(), "listen tcp on "+taken.Addr().String()) {
		t.Fatalf("Listen = %v", err)
	}
}

func TestServer_HTTPConnectionLimit(t *testing.T) {
	srv := server.New(servertest.OpenDB(t), server.Config{HTTPAddr: "127.0.0.1:0", HTTPMaxConns: 1, Logger: servertest.Logger(t)})
	if err := srv.Listen(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.Serve(ctx)
	addr := srv.Addrs().HTTP
	first, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	fmt.Fprintf(first, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	first.SetDeadline(time.Now().Add(10 * time.Second))
	b := make([]byte, 512)
	if n, err := first.Read(b); err != nil || !strings.HasPrefix(string(b[:n]), "HTTP/1.1 200") {
		t.Fatalf("first connection: %q %v", b[:n], err)
	}
	second, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	second.SetDeadline(time.Now().Add(10 * time.Second))
	out, _ := io.ReadAll(second)
	if !strings.HasPrefix(string(out), "HTTP/1.1 503") || !strings.Contains(string(out), "too_many_connections") {
		t.Fatalf("second connection got %q", out)
	}
	resp, err := http.ReadResponse(bufioReader(out), nil)
	if err != nil || resp.StatusCode != 503 {
		t.Fatalf("the 503 does not parse: %v", err)
	}
}

func TestServer_DrainKeepsEveryAcknowledgedWriteOnEveryTransport(t *testing.T) {
	dir := t.TempDir()
	db, err := kvstore.Open(dir, kvstore.Options{Sync: kvstore.SyncAlways, Logger: servertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(db, server.Config{HTTPAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0", RESPAddr: "127.0.0.1:0", Logger: servertest.Logger(t)})
	if err := srv.Listen(context.Background()); err != nil {
		t.Fatal(err)
	}
	addrs := srv.Addrs()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()

	var mu sync.Mutex
	var acked []string
	ack := func(k string) { mu.Lock(); acked = append(acked, k); mu.Unlock() }
	var wg sync.WaitGroup
	writers := map[string]func(string) error{
		"http": func(k string) error {
			req, _ := http.NewRequest(http.MethodPut, "http://"+addrs.HTTP+"/keys/"+k, strings.NewReader(k))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != 204 {
				return errors.New(resp.Status)
			}
			return nil
		},
	}
	tc, _ := tcpjson.Dial(context.Background(), addrs.TCP)
	defer tc.Close()
	writers["tcp"] = func(k string) error { return tc.Set(context.Background(), []byte(k), []byte(k)) }
	rc := redis.NewClient(&redis.Options{Addr: addrs.RESP, MaxRetries: -1})
	defer rc.Close()
	writers["resp"] = func(k string) error { return rc.Set(context.Background(), k, k, 0).Err() }
	for name, write := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				k := fmt.Sprintf("%s:%d", name, i)
				if write(k) != nil {
					return
				}
				ack(k)
			}
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n > 300 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged")
	}
	servertest.CheckAcknowledged(t, db, dir, acked)
}

func TestServer_HTTPMalformedSilentAndHalfDoneClientsDoNotStopOthers(t *testing.T) {
	db := servertest.OpenDB(t)
	srv := server.New(db, server.Config{HTTPAddr: "127.0.0.1:0", HTTPReadHeaderTimeout: 300 * time.Millisecond, Logger: servertest.Logger(t)})
	if err := srv.Listen(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.Serve(ctx)
	addr := srv.Addrs().HTTP
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(10 * time.Second))
		return c
	}
	answer := func(c net.Conn) string {
		b, _ := io.ReadAll(c)
		return string(b)
	}

	garbage := dial()
	fmt.Fprint(garbage, "THIS IS NOT HTTP\r\n\r\n")
	if got := answer(garbage); !strings.HasPrefix(got, "HTTP/1.1 400") {
		t.Errorf("garbage request line: %q", got)
	}
	hugeHeader := dial()
	fmt.Fprintf(hugeHeader, "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", strings.Repeat("a", 1<<20))
	if got := answer(hugeHeader); !strings.HasPrefix(got, "HTTP/1.1 431") {
		t.Errorf("1 MiB header: %.60q", got)
	}
	silent := dial() // connects and sends nothing: closed at the header timeout
	half := dial()   // disconnects mid-request, body half sent
	fmt.Fprint(half, "PUT /keys/half HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
	half.Close()

	req, _ := http.NewRequest(http.MethodPut, "http://"+addr+"/keys/k", strings.NewReader("v"))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 204 {
		t.Fatalf("a good client was not served: %v %v", resp, err)
	}
	start := time.Now()
	if got := answer(silent); got != "" && !strings.HasPrefix(got, "HTTP/1.1 408") {
		t.Errorf("silent client got %q", got)
	}
	if time.Since(start) > 5*time.Second {
		t.Error("silent client was not closed by the header timeout")
	}
	if _, err := db.Get([]byte("half")); !errors.Is(err, kvstore.ErrNotFound) {
		t.Fatalf("half-sent PUT was applied: %v", err)
	}
}

// TestDeletes_ConcurrentClientsReportEachKeyOnce: 4 clients on each
// transport delete the same 500 keys; the deletions reported add up to 500.
func TestDeletes_ConcurrentClientsReportEachKeyOnce(t *testing.T) {
	dir := t.TempDir()
	db, err := kvstore.Open(dir, kvstore.Options{Sync: kvstore.SyncAlways, Logger: servertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() }) // after the server's cleanup: it stops first
	a := serve(t, server.New(db, server.Config{HTTPAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0", RESPAddr: "127.0.0.1:0", Logger: servertest.Logger(t)}))
	ctx := context.Background()
	const keys = 500
	deleters := map[string]func(key string) (bool, error){
		"http": func(key string) (bool, error) {
			req, _ := http.NewRequest(http.MethodDelete, "http://"+a.HTTP+"/keys/"+key, nil)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return false, err
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			return res.StatusCode == 204, nil
		},
		"tcp": func(key string) (bool, error) {
			c, err := tcpjson.Dial(ctx, a.TCP)
			if err != nil {
				return false, err
			}
			defer c.Close()
			return c.Delete(ctx, []byte(key))
		},
	}
	for name, del := range deleters {
		t.Run(name, func(t *testing.T) {
			for i := range keys {
				db.Set(fmt.Appendf(nil, "%s%d", name, i), []byte("v"))
			}
			var wg sync.WaitGroup
			var mu sync.Mutex
			total := 0
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range keys {
						found, err := del(fmt.Sprint(name, i))
						if err != nil {
							t.Error(err)
							return
						}
						if found {
							mu.Lock()
							total++
							mu.Unlock()
						}
					}
				}()
			}
			wg.Wait()
			if total != keys {
				t.Fatalf("4 clients deleting the same %d keys over %s reported %d deletions", keys, name, total)
			}
		})
	}
}
