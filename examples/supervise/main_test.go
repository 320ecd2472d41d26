package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/devkit-go/devkit/supervisor"
)

// TestMain lets the test binary play the program's monitor and worker roles,
// as main does: the supervisor re-executes os.Executable() as both.
func TestMain(m *testing.M) {
	supervisor.MonitorMain()
	if code, ok := dispatch(os.Args[1:]); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

func TestRun_StartsInOrderAndStopsEverything(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, t.TempDir()); err != nil {
		t.Fatalf("run: %v\n%s", err, &out)
	}
	got := out.String()
	db, api := strings.Index(got, "started db"), strings.Index(got, "started api")
	if db < 0 || api < 0 || db > api {
		t.Errorf("db must start before api:\n%s", got)
	}
	sdb, sapi := strings.Index(got, "stopped db"), strings.Index(got, "stopped api")
	if sdb < 0 || sapi < 0 || sapi > sdb {
		t.Errorf("api must stop before db:\n%s", got)
	}
	for _, want := range []string{"status db  running", "status api running", "status db  stopped", "status api stopped"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
