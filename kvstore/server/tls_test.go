package server_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/internal/testcert"
	"github.com/devkit-go/devkit/kvstore/server"
	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/tcpjson"
)

func TestTLSAndPassword_OnEveryListener(t *testing.T) {
	certFile, keyFile, pool := testcert.SelfSigned(t, t.TempDir())
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	db := servertest.OpenDB(t)
	a := serve(t, server.New(db, server.Config{HTTPAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0", RESPAddr: "127.0.0.1:0",
		TLS: &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, Password: "pw", Logger: servertest.Logger(t)}))
	ctx := context.Background()
	clientTLS := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}

	// RESP
	rc := redis.NewClient(&redis.Options{Addr: a.RESP, TLSConfig: clientTLS, Password: "pw"})
	defer rc.Close()
	if err := rc.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("RESP over TLS with the password: %v", err)
	}
	noauth := redis.NewClient(&redis.Options{Addr: a.RESP, TLSConfig: clientTLS, MaxRetries: -1})
	defer noauth.Close()
	if err := noauth.Get(ctx, "k").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
		t.Fatalf("RESP without the password: %v", err)
	}
	plain := redis.NewClient(&redis.Options{Addr: a.RESP, MaxRetries: -1, Password: "pw"})
	defer plain.Close()
	if err := plain.Ping(ctx).Err(); err == nil {
		t.Fatal("RESP answered a client that does not speak TLS")
	}

	// TCP JSON
	tc, err := tcpjson.DialWith(ctx, a.TCP, tcpjson.DialOptions{TLS: clientTLS, Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	if v, err := tc.Get(ctx, []byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("TCP JSON over TLS: %q %v", v, err)
	}
	anon, err := tcpjson.DialWith(ctx, a.TCP, tcpjson.DialOptions{TLS: clientTLS})
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	var se *tcpjson.Error
	if _, err := anon.Get(ctx, []byte("k")); !errors.As(err, &se) || se.Code != tcpjson.CodeUnauthorized {
		t.Fatalf("TCP JSON without the password: %v", err)
	}
	if _, err := tcpjson.DialWith(ctx, a.TCP, tcpjson.DialOptions{TLS: clientTLS, Password: "wrong"}); err == nil {
		t.Fatal("TCP JSON accepted a wrong password")
	}

	// HTTP
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: clientTLS}}
	get := func(path, token string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+a.HTTP+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := hc.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := get("/keys/k", "pw"); code != 200 || body != "v" {
		t.Fatalf("HTTPS GET with the token: %d %q", code, body)
	}
	if code, body := get("/keys/k", ""); code != 401 || !strings.Contains(body, "unauthorized") {
		t.Fatalf("HTTPS GET without the token: %d %q", code, body)
	}
	if code, _ := get("/keys/k", "nope"); code != 401 {
		t.Fatalf("HTTPS GET with a wrong token: %d", code)
	}
	if code, _ := get("/health", ""); code != 200 {
		t.Fatalf("/health without the token: %d, want 200 (load balancers)", code)
	}
}
