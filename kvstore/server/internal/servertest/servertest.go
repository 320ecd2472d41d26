// Package servertest holds what the server tests share: a real engine on a
// temporary directory and a fault-injecting wrapper around it.
package servertest

import (
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/backend"
)

// OpenDB opens an engine on a fresh temporary directory with SyncNone (the
// tests that are about durability pass their own options to Open) and
// closes it at cleanup.
func OpenDB(t testing.TB) *kvstore.DB {
	t.Helper()
	db, err := kvstore.Open(t.TempDir(), kvstore.Options{Sync: kvstore.SyncNone, Logger: Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Logger discards logs unless the test runs with -v.
func Logger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// Listen listens on a free 127.0.0.1 port.
func Listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// PanicKey is the key on which a PanickyStore panics.
const PanicKey = "panic!"

// PanickyStore is a real store that panics on any operation on PanicKey,
// to prove that no panic reaches a client.
type PanickyStore struct{ backend.Store }

func (p PanickyStore) check(key []byte) {
	if string(key) == PanicKey {
		panic("injected fault on " + PanicKey)
	}
}

func (p PanickyStore) Get(key []byte) ([]byte, error) { p.check(key); return p.Store.Get(key) }
func (p PanickyStore) Has(key []byte) (bool, error)   { p.check(key); return p.Store.Has(key) }
func (p PanickyStore) Set(key, value []byte) error    { p.check(key); return p.Store.Set(key, value) }
func (p PanickyStore) Delete(key []byte) error        { p.check(key); return p.Store.Delete(key) }
