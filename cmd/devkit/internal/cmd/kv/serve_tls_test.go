package kv

import (
	"context"
	"strings"
	"testing"

	"github.com/devkit-go/devkit/internal/testcert"
	"github.com/devkit-go/devkit/kvstore/server"
)

func TestServe_TLSAndPasswordWithTheClientCommands(t *testing.T) {
	certFile, keyFile, _ := testcert.SelfSigned(t, t.TempDir())
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
