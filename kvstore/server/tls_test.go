package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/kvstore/server"
	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/tcpjson"
)

// selfSigned writes a certificate for 127.0.0.1 and its key into dir and
// returns their paths and a pool that trusts it.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "devkit-kv test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestTLSAndPassword_OnEveryListener(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t, t.TempDir())
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
