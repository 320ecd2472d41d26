package redistest

import (
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A cluster node above port 55535 has no bus port: Redis exits at once.
// The wait reports that at once, with the log's reason, instead of
// polling a port nobody will open until its timeout.
func TestWaitReady_AServerThatExitsIsReportedAtOnceWithItsLog(t *testing.T) {
	RequireBinaries(t, "redis-server")
	dir := t.TempDir()
	logFile := filepath.Join(dir, "redis.log")
	port := 0
	for p := 55536; p < 61000 && port == 0; p += 97 { // above 55535, free a moment ago
		if portFree(p) {
			port = p
		}
	}
	if port == 0 {
		t.Fatal("no free port above 55535")
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	s := start(t, exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--cluster-enabled", "yes", "--logfile", logFile), addr, logFile)
	defer s.Stop()
	began := time.Now()
	err := s.waitReady(20 * time.Second)
	if err == nil {
		t.Fatalf("a cluster node on port %d answered; want it to exit", port)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("the exit was reported after %v, want at once", took)
	}
	// The reason is the port (or, had another test taken it meanwhile, that).
	if !strings.Contains(err.Error(), "exited") ||
		!(strings.Contains(err.Error(), "55535") || strings.Contains(err.Error(), "Address already in use")) {
		t.Errorf("error %q: want the exit and the log's reason (port above 55535)", err)
	}
}

// clusterPort's ports have a bus port that exists and is free, and lie
// below the kernel's ephemeral range.
func TestClusterPort_AFreePairBelowTheEphemeralRange(t *testing.T) {
	for range 20 {
		p := clusterPort(t)
		if p < 20000 || p+10000 > 32767 {
			t.Fatalf("port %d (bus %d): want 20000–22767 (bus 30000–32767)", p, p+10000)
		}
		for _, q := range []int{p, p + 10000} {
			if !portFree(q) {
				t.Fatalf("port %d from clusterPort is not free", q)
			}
		}
	}
}
