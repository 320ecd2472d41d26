package ready

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestHTTP_OnlyTwoHundredsAreReady(t *testing.T) {
	status := http.StatusServiceUnavailable
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(status) }))
	defer srv.Close()
	p := HTTP{URL: srv.URL}
	if err := p.Check(context.Background()); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("503: err = %v", err)
	}
	status = http.StatusNoContent
	if err := p.Check(context.Background()); err != nil {
		t.Fatalf("204: err = %v", err)
	}
}

func TestTCP_AcceptingListenerIsReady(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := (TCP{Addr: addr}).Check(context.Background()); err != nil {
		t.Fatalf("listening: %v", err)
	}
	ln.Close()
	if err := (TCP{Addr: addr}).Check(context.Background()); err == nil {
		t.Fatal("closed port reported ready")
	}
}

func TestLog_OnlyLinesAfterTheOffsetCount(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.log")
	os.WriteFile(path, []byte("listening (previous run)\n"), 0o600)
	fi, _ := os.Stat(path)
	p := Log{Path: path, Offset: fi.Size(), Pattern: regexp.MustCompile("(?m)^listening")}
	if p.Check(context.Background()) == nil {
		t.Fatal("a line from before the start counted")
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("booting\nlistening on :80\n")
	f.Close()
	if err := p.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestWait_StopsEarlyWhenTheProcessDies(t *testing.T) {
	died := errors.New("process exited")
	calls := 0
	alive := func() error {
		calls++
		if calls > 2 {
			return died
		}
		return nil
	}
	never := Exec{Command: "exit 1"}
	err := Wait(context.Background(), never, time.Millisecond, time.Minute, alive)
	if !errors.Is(err, died) || calls != 3 {
		t.Fatalf("err = %v", err)
	}
	err = Wait(context.Background(), never, time.Millisecond, 20*time.Millisecond, func() error { return nil })
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("timeout: err = %v", err)
	}
}
