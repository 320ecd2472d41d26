package tcpjson_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
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

// TestClient_BackupRefusesADamagedStream plays a server that streams a real
// checkpoint with one byte flipped: the client must refuse it (ErrCorrupt)
// and keep no snapshot.
func TestClient_BackupRefusesADamagedStream(t *testing.T) {
	db := servertest.OpenDB(t)
	for i := range 500 {
		db.Set(fmt.Appendf(nil, "k%d", i), []byte("value"))
	}
	var stream bytes.Buffer
	if _, err := db.StreamCheckpoint(context.Background(), &stream); err != nil {
		t.Fatal(err)
	}
	damaged := stream.Bytes()
	damaged[len(damaged)/2] ^= 0x40
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		bufio.NewReader(c).ReadString('\n') // the backup request
		fmt.Fprintf(c, "{\"ok\":true,\"stream\":\"chunked\"}\n%d\n", len(damaged))
		c.Write(damaged)
		fmt.Fprint(c, "0\n{\"ok\":true,\"files\":[{\"name\":\"x\",\"size\":1}]}\n")
	}()
	c, err := tcpjson.Dial(context.Background(), ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dir := filepath.Join(t.TempDir(), "backup")
	if _, err := c.Backup(context.Background(), dir); !errors.Is(err, kvstore.ErrCorrupt) {
		t.Fatalf("Backup of a damaged stream = %v, want ErrCorrupt", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "snap") {
			t.Fatalf("a damaged backup left %s behind", e.Name())
		}
	}
}

// An HTTP server answers a JSON line with an HTTP error page: the client
// says it is HTTP instead of failing on the first byte of "HTTP/1.1".
func TestClient_AnHTTPListenerIsNamedAsOne(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	c, err := tcpjson.Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Get(context.Background(), []byte("k"))
	var pe *tcpjson.ProtocolError
	if !errors.As(err, &pe) || pe.Protocol != "HTTP" || pe.Addr != addr {
		t.Fatalf("Get against an HTTP server: %v, want a ProtocolError naming HTTP at %s", err, addr)
	}
}
