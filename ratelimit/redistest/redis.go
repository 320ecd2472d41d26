// Package redistest starts real Redis servers for tests: one node, or a
// 3-master cluster, each on free 127.0.0.1 ports in a t.TempDir(), stopped at
// cleanup. Without redis-server the test skips with the install hint, except
// under CI=true, where it fails: CI must run the real thing.
package redistest

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// InstallHint tells how to get the Redis binaries the tests need.
const InstallHint = "apt-get install redis-server redis-tools"

// RequireBinaries skips (or, under CI=true, fails) t unless every named
// binary is on PATH.
func RequireBinaries(t testing.TB, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := exec.LookPath(name); err != nil {
			msg := fmt.Sprintf("%s not found on PATH; install it: %s", name, InstallHint)
			if os.Getenv("CI") == "true" {
				t.Fatal(msg + " (CI=true: real-Redis tests must run)")
			}
			t.Skip(msg)
		}
	}
}

// Server is a redis-server started for one test.
type Server struct {
	Addr string
	cmd  *exec.Cmd
	log  string        // its log file
	done chan struct{} // closed when the process has exited
}

// start runs cmd as the server at addr, logging to logFile.
func start(t testing.TB, cmd *exec.Cmd, addr, logFile string) *Server {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	s := &Server{Addr: addr, cmd: cmd, log: logFile, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.done) }()
	return s
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// portFree reports whether port p on 127.0.0.1 could be bound a moment ago.
func portFree(p int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// StartRedis starts a single redis-server and returns it once it answers;
// when AsDevkitKV is set, a devkit kv serve instead (see StartDevkitKV).
func StartRedis(t testing.TB) *Server {
	t.Helper()
	if AsDevkitKV() {
		return StartDevkitKV(t)
	}
	RequireBinaries(t, "redis-server")
	return startServer(t, FreePort, t.TempDir())
}

// DevkitBinEnv names the devkit binary StartDevkitKV runs (make test builds
// bin/devkit and sets it: the ratelimit module cannot import kvstore).
const DevkitBinEnv = "DEVKIT_BIN"

// AsDevkitEnv, set to 1, makes StartRedis start devkit kv serve: a test
// suite written for redis-server then runs against devkit kv unchanged.
const AsDevkitEnv = "REDISTEST_DEVKIT_KV"

// AsDevkitKV reports whether StartRedis starts devkit kv serve. Tests of
// what one devkit kv node does not have (a cluster, Sentinel, DEBUG) skip
// themselves then.
func AsDevkitKV() bool { return os.Getenv(AsDevkitEnv) == "1" }

// SkipOnDevkitKV skips t when StartRedis starts devkit kv, saying why.
func SkipOnDevkitKV(t testing.TB, why string) {
	t.Helper()
	if AsDevkitKV() {
		t.Skip("devkit kv: " + why)
	}
}

// DevkitBin returns the devkit binary of $DEVKIT_BIN, skipping (or, under
// CI=true, failing) t when it is unset or missing.
func DevkitBin(t testing.TB) string {
	t.Helper()
	bin := os.Getenv(DevkitBinEnv)
	if bin == "" {
		msg := "$" + DevkitBinEnv + " is not set: build devkit (make build) and set it to bin/devkit's path, or run make test"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI=true: the devkit kv tests must run)")
		}
		t.Skip(msg)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("$%s=%s: %v", DevkitBinEnv, bin, err)
	}
	return bin
}

// DevkitKVLacks starts bin's `devkit kv serve` for a moment and returns
// the commands of names it does not serve (COMMAND INFO answers nil).
func DevkitKVLacks(bin string, names ...string) ([]string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	dir, err := os.MkdirTemp("", "devkit-kv-probe-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command(bin, "kv", "serve", "--data", dir, "--http", "", "--tcp", "", "--resp", addr, "--log-level", "error")
	s := &Server{Addr: addr, cmd: cmd, log: filepath.Join(dir, "none"), done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = cmd.Wait(); close(s.done) }()
	defer s.Stop()
	if err := s.waitReady(10 * time.Second); err != nil {
		return nil, err
	}
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	var missing []string
	for _, name := range names {
		v, err := c.Do(context.Background(), "COMMAND", "INFO", name).Slice()
		if err != nil {
			return nil, err
		}
		if len(v) == 0 || v[0] == nil {
			missing = append(missing, name)
		}
	}
	return missing, nil
}

// StartRedisServer starts a real redis-server (whatever AsDevkitKV says)
// with the extra arguments (say "--appendonly", "yes"), as StartRedis does.
func StartRedisServer(t testing.TB, extra ...string) *Server {
	t.Helper()
	RequireBinaries(t, "redis-server")
	return startServer(t, FreePort, t.TempDir(), extra...)
}

// StartDevkitKV starts `devkit kv serve` with only its RESP listener on a
// free port and a data directory in t.TempDir(), and the extra arguments
// (say "--sync", "periodic"), and returns it once it answers PING; it is
// stopped at cleanup.
func StartDevkitKV(t testing.TB, extra ...string) *Server {
	t.Helper()
	bin := DevkitBin(t)
	dir := t.TempDir()
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port := FreePort(t)
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		logFile := filepath.Join(dir, fmt.Sprintf("devkit-kv-%d.log", port))
		f, err := os.Create(logFile)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "kv", "serve", "--data", filepath.Join(dir, "data"), "--http", "", "--tcp", "",
			"--resp", addr, "--log-level", "warn", "--allow-flush")
		cmd.Args = append(cmd.Args, extra...)
		cmd.Stdout, cmd.Stderr = f, f
		s := start(t, cmd, addr, logFile)
		f.Close()
		if lastErr = s.waitReady(10 * time.Second); lastErr == nil {
			t.Cleanup(s.Stop)
			return s
		}
		s.Stop()
	}
	t.Fatalf("devkit kv serve did not start: %v", lastErr)
	return nil
}

// startServer starts a redis-server in dir on a port from pick, with the
// extra arguments, and returns it once it answers.
func startServer(t testing.TB, pick func(testing.TB) int, dir string, extra ...string) *Server {
	t.Helper()
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // a free port may be taken between probe and bind
		port := pick(t)
		logFile := filepath.Join(dir, fmt.Sprintf("redis-%d.log", port))
		args := append([]string{
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
			"--save", "", "--appendonly", "no", "--protected-mode", "no",
			// DEBUG SLEEP makes a slow server on demand (local clients only).
			"--enable-debug-command", "local",
			"--logfile", logFile,
		}, extra...)
		s := start(t, exec.Command("redis-server", args...), net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), logFile)
		if lastErr = s.waitReady(5 * time.Second); lastErr == nil {
			t.Cleanup(s.Stop)
			return s
		}
		s.Stop()
	}
	t.Fatalf("redis-server did not start: %v", lastErr)
	return nil
}

// waitReady waits until s answers PING, for at most timeout; a server that
// exits meanwhile (a port taken, a bad option) ends the wait at once, with
// the end of its log.
func (s *Server) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-s.done:
			return fmt.Errorf("server on %s exited: %s", s.Addr, logTail(s.log))
		default:
		}
		c := redis.NewClient(&redis.Options{Addr: s.Addr, DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
		err := c.Ping(context.Background()).Err()
		c.Close()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// logTail is the last lines of a log file, for an error message.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-3):], " | ")
}

// Stop kills the server and waits for it. It may be called more than once.
func (s *Server) Stop() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	<-s.done
}

// clusterPort returns a port p for a cluster node whose bus port, p+10000,
// is a port too (Redis refuses a node above 55535, and FreePort's ports
// reach 60999), with both free a moment ago. Both lie below the kernel's
// ephemeral range (32768–60999 by default), so an outgoing connection of
// another test cannot take either as its source port meanwhile.
func clusterPort(t testing.TB) int {
	t.Helper()
	for range 200 {
		if p := 20000 + rand.IntN(2768); portFree(p) && portFree(p+10000) { // bus 30000–32767
			return p
		}
	}
	t.Fatal("no free pair of ports (p, p+10000) for a cluster node in 20000–32767")
	return 0
}

// Client returns a client of s closed at cleanup.
func (s *Server) Client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr }

// CPU is the CPU time (user and system) the server's process has used so
// far, read from /proc; ok is false where there is none.
func (s *Server) CPU() (used time.Duration, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0, false
	}
	// utime and stime are the 14th and 15th fields, in clock ticks (100 a
	// second); the command name before them is in parentheses.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, true
}

// Cluster is a 3-master Redis Cluster started for one test.
type Cluster struct {
	Addrs   []string
	servers []*Server
}

// StartCluster starts three cluster-enabled redis-servers, joins them with
// redis-cli --cluster create, and returns once cluster_state is ok on all.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	SkipOnDevkitKV(t, "one node, no cluster mode")
	RequireBinaries(t, "redis-server", "redis-cli")
	dir := t.TempDir()
	c := &Cluster{}
	for i := 0; i < 3; i++ {
		nodeDir := filepath.Join(dir, strconv.Itoa(i))
		if err := os.MkdirAll(nodeDir, 0o755); err != nil {
			t.Fatal(err)
		}
		// Without full coverage required, the healthy masters keep serving
		// their slots when one master is down (what a deployment that wants
		// partial availability sets).
		s := startServer(t, clusterPort, nodeDir, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000", "--cluster-require-full-coverage", "no")
		c.servers = append(c.servers, s)
		c.Addrs = append(c.Addrs, s.Addr)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(15 * time.Second)
	for _, addr := range c.Addrs {
		for !clusterOK(addr) {
			if time.Now().After(deadline) {
				t.Fatalf("cluster node %s never reached cluster_state:ok", addr)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return c
}

func clusterOK(addr string) bool {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	info, err := c.ClusterInfo(context.Background()).Result()
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "cluster_state:ok" {
			return true
		}
	}
	return false
}

// StopNode kills the master at Addrs[i] (a partial failure).
func (c *Cluster) StopNode(i int) { c.servers[i].Stop() }

// Client returns a cluster client closed at cleanup.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs, ContextTimeoutEnabled: true})
	t.Cleanup(func() { cc.Close() })
	return cc
}

// URL is the cluster's redis:// URL with the nodes as a comma list.
func (c *Cluster) URL() string { return "redis://" + strings.Join(c.Addrs, ",") }

// HangingServer accepts TCP connections and never answers: a Redis that
// hangs. It is closed at cleanup.
func HangingServer(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var conns []net.Conn
	go func() {
		defer close(done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				for _, c := range conns {
					c.Close()
				}
				return
			}
			conns = append(conns, conn) // held open, never read or written
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return ln.Addr().String()
}

// StartSentinel starts a redis-server in sentinel mode that monitors master
// under the name "mymaster", and returns its address once it answers.
func StartSentinel(t testing.TB, master *Server) string {
	t.Helper()
	SkipOnDevkitKV(t, "no Sentinel")
	RequireBinaries(t, "redis-server")
	return startSentinel(t, master, FreePort, 1, 5*time.Second, "").Addr
}

// startSentinel starts a sentinel on a port from pick that monitors master
// as SentinelMaster with quorum, finds it down after downAfter, and has the
// extra configuration lines extra; it returns once the sentinel answers.
func startSentinel(t testing.TB, master *Server, pick func(testing.TB) int, quorum int, downAfter time.Duration,
	extra string) *Server {
	t.Helper()
	dir := t.TempDir()
	port := pick(t)
	host, masterPort, _ := net.SplitHostPort(master.Addr)
	conf := filepath.Join(dir, "sentinel.conf")
	body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor %s %s %s %d\nsentinel down-after-milliseconds %s %d\n",
		port, dir, SentinelMaster, host, masterPort, quorum, SentinelMaster, downAfter.Milliseconds()) + extra
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "sentinel.log")
	s := start(t, exec.Command("redis-server", conf, "--sentinel", "--logfile", logFile),
		net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), logFile)
	t.Cleanup(s.Stop)
	if err := s.waitReady(5 * time.Second); err != nil {
		t.Fatalf("sentinel did not start: %v", err)
	}
	return s
}

// StartReplica starts a redis-server replicating master and returns it once
// its link to the master is up.
func StartReplica(t testing.TB, master *Server) *Server {
	t.Helper()
	SkipOnDevkitKV(t, "devkit kv has no replication: no replica can follow it (these tests ran against redis-server)")
	return startReplica(t, master, FreePort)
}

// startReplica starts a replica of master on a port from pick and returns
// it once its link to the master is up.
func startReplica(t testing.TB, master *Server, pick func(testing.TB) int) *Server {
	t.Helper()
	host, port, _ := net.SplitHostPort(master.Addr)
	s := startServer(t, pick, t.TempDir(), "--replicaof", host, port)
	c := s.Client(t)
	for deadline := time.Now().Add(10 * time.Second); ; {
		info, _ := c.Info(context.Background(), "replication").Result()
		if strings.Contains(info, "master_link_status:up") {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica of %s: link not up:\n%s", master.Addr, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
