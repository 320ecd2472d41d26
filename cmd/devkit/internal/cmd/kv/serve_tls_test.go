package kv

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore/server"
)

// writeSelfSigned writes a certificate for 127.0.0.1 and its key into dir.
func writeSelfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "devkit-kv test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
	return certFile, keyFile
}

func TestServe_TLSAndPasswordWithTheClientCommands(t *testing.T) {
	certFile, keyFile := writeSelfSigned(t, t.TempDir())
	ios, _, errOut := streams("")
	opts := serveDefaults(ios, t.TempDir())
	opts.RequirePass, opts.TLSCert, opts.TLSKey = "s3cret", certFile, keyFile
	ready := make(chan server.Addrs, 1)
	opts.Ready = func(a server.Addrs) { ready <- a }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveRun(ctx, opts) }()
	defer func() { cancel(); <-done }()
	var a server.Addrs
	select {
	case a = <-ready:
	case err := <-done:
		t.Fatalf("serve ended early: %v\n%s", err, errOut)
	}
	env := map[string]string{AddrEnv: a.TCP, PasswordEnv: "s3cret"}
	if _, e, code := run(t, env, "", "set", "--tls-ca", certFile, "k", "v"); code != 0 {
		t.Fatalf("set over TLS with the password from the environment: %d %q", code, e)
	}
	if out, e, code := run(t, env, "", "get", "--tls-ca", certFile, "k"); code != 0 || out != "v" {
		t.Fatalf("get: %d %q %q", code, out, e)
	}
	if _, e, code := run(t, env, "", "get", "--tls-ca", certFile, "--password", "wrong", "k"); code != 1 || !strings.Contains(e, "refused the password") {
		t.Fatalf("get with a wrong --password: %d %q", code, e)
	}
	if _, _, code := run(t, map[string]string{AddrEnv: a.TCP}, "", "get", "--tls-ca", certFile, "k"); code != 1 {
		t.Fatalf("get without a password: exit %d", code)
	}
	if _, _, code := run(t, env, "", "ping"); code != 1 {
		t.Fatalf("ping without TLS against a TLS listener: exit %d", code)
	}
}
