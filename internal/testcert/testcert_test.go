package testcert

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"
)

// The certificate serves HTTPS on 127.0.0.1 to a client that trusts the
// returned pool, and to no client without it.
func TestSelfSigned_ServesTLSOnLoopbackToAClientTrustingThePool(t *testing.T) {
	certFile, keyFile, pool := SelfSigned(t, t.TempDir())
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	defer srv.Close()
	trusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	resp, err := trusting.Get(srv.URL)
	if err != nil {
		t.Fatalf("GET with the pool: %v", err)
	}
	resp.Body.Close()
	plain := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12}}}
	if resp, err := plain.Get(srv.URL); err == nil {
		resp.Body.Close()
		t.Fatal("a client without the pool trusted the certificate")
	}
}
