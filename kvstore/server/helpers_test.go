package server_test

import (
	"bufio"
	"bytes"
	"context"
	"testing"

	"github.com/devkit-go/devkit/kvstore/server"
)

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

// serve listens on srv's addresses and serves until the test ends (it
// stops in a cleanup, before those registered earlier, such as the
// engine's), and returns the addresses.
func serve(t *testing.T, srv *server.Server) server.Addrs {
	t.Helper()
	if err := srv.Listen(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return srv.Addrs()
}
