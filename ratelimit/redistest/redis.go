// Package redistest starts real Redis servers for tests: one node, or a
// 3-master cluster, each on free 127.0.0.1 ports in a t.TempDir(), stopped at
// cleanup. Without redis-server the test skips with the install hint, except
// under CI=true, where it fails: CI must run the real thing.
package redistest

import (
	"bufio"
	"context"
	"fmt"
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
	dir  string
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

// StartRedis starts a single redis-server and returns it once it answers.
func StartRedis(t testing.TB) *Server {
	t.Helper()
	RequireBinaries(t, "redis-server")
	return startServer(t, t.TempDir())
}

func startServer(t testing.TB, dir string, extra ...string) *Server {
	t.Helper()
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // a free port may be taken between probe and bind
		port := FreePort(t)
		args := append([]string{
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
			"--save", "", "--appendonly", "no", "--protected-mode", "no",
			// DEBUG SLEEP makes a slow server on demand (local clients only).
			"--enable-debug-command", "local",
			"--logfile", filepath.Join(dir, fmt.Sprintf("redis-%d.log", port)),
		}, extra...)
		cmd := exec.Command("redis-server", args...)
		if err := cmd.Start(); err != nil {
			t.Fatalf("start redis-server: %v", err)
		}
		s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd, dir: dir}
		if lastErr = s.waitReady(5 * time.Second); lastErr == nil {
			t.Cleanup(s.Stop)
			return s
		}
		s.Stop()
	}
	t.Fatalf("redis-server did not start: %v", lastErr)
	return nil
}

func (s *Server) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
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

// Stop kills the server and waits for it. It may be called more than once.
func (s *Server) Stop() {
	if s.cmd.Process == nil || s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

// Client returns a client of s closed at cleanup.
func (s *Server) Client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr }

// Cluster is a 3-master Redis Cluster started for one test.
type Cluster struct {
	Addrs   []string
	servers []*Server
}

// StartCluster starts three cluster-enabled redis-servers, joins them with
// redis-cli --cluster create, and returns once cluster_state is ok on all.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
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
		s := startServer(t, nodeDir, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
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
	RequireBinaries(t, "redis-server")
	dir := t.TempDir()
	port := FreePort(t)
	host, masterPort, _ := net.SplitHostPort(master.Addr)
	conf := filepath.Join(dir, "sentinel.conf")
	body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor mymaster %s %s 1\nsentinel down-after-milliseconds mymaster 5000\n",
		port, dir, host, masterPort)
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("redis-server", conf, "--sentinel", "--logfile", filepath.Join(dir, "sentinel.log"))
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sentinel: %v", err)
	}
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd, dir: dir}
	t.Cleanup(s.Stop)
	if err := s.waitReady(5 * time.Second); err != nil {
		t.Fatalf("sentinel did not start: %v", err)
	}
	return s.Addr
}
