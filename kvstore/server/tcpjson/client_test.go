package tcpjson_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore/server/tcpjson"
)

// TestClient_ContextCancelInterruptsAWaitingRequest talks to a server that
// accepts and never answers.
func TestClient_ContextCancelInterruptsAWaitingRequest(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	c, err := tcpjson.Dial(context.Background(), ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := c.Ping(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ping = %v, want the context's deadline", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("the deadline did not interrupt the read")
	}
	// The connection is out of step now: later calls fail instead of reading a stale reply.
	if err := c.Ping(context.Background()); err == nil {
		t.Fatal("a broken client answered")
	}
}
