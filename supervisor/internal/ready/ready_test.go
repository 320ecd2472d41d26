package ready

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
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
	p := &Log{Path: path, Offset: fi.Size(), Pattern: regexp.MustCompile("(?m)^listening")}
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

func TestLog_EachCheckReadsOnlyTheNewBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.log")
	f, _ := os.Create(path)
	defer f.Close()
	f.Write(bytes.Repeat([]byte("noise noise noise noise noise noise noise\n"), 200_000)) // ~8 MB since the start
	p := &Log{Path: path, Pattern: regexp.MustCompile("(?m)^ready$")}
	if p.Check(context.Background()) == nil {
		t.Fatal("matched noise")
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range 20 {
		f.WriteString("more noise\npartial ")
		if i == 19 {
			f.WriteString("\nready\n")
		}
		err := p.Check(context.Background())
		if (err == nil) != (i == 19) {
			t.Fatalf("check %d: %v", i, err)
		}
	}
	runtime.ReadMemStats(&after)
	// Rescanning would allocate the whole log on every check (160 MB).
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Fatalf("20 checks of a few new bytes allocated %d bytes: the log is rescanned", alloc)
	}
}

func TestLog_LineSplitAcrossChecksStillMatches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.log")
	f, _ := os.Create(path)
	defer f.Close()
	p := &Log{Path: path, Pattern: regexp.MustCompile("(?m)^listening on")}
	f.WriteString("boot\nlisten")
	if p.Check(context.Background()) == nil {
		t.Fatal("matched half a line")
	}
	f.WriteString("ing on :80\n")
	if err := p.Check(context.Background()); err != nil {
		t.Fatalf("a line split across checks: %v", err)
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
