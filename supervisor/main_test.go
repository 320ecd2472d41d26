package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/devkit-go/devkit/supervisor/internal/logfile"
)

// The test binary plays three parts, chosen by environment variables: the
// monitor (as devkit does), helper children with scripted behaviour, and
// the test suite itself.
const (
	roleEnv  = "SUP_TEST_ROLE"  // "monitor" or "child"
	childEnv = "SUP_TEST_CHILD" // what a helper child does
)

// slowLogEnv, set to a duration, makes a monitor copy output to the log
// 4 KiB at a time with that pause before each read.
const slowLogEnv = "SUP_TEST_SLOW_LOG"

type slowReader struct {
	r     io.Reader
	pause time.Duration
}

func (s *slowReader) Read(p []byte) (int, error) {
	time.Sleep(s.pause)
	return s.r.Read(p[:min(len(p), 4096)])
}

func TestMain(m *testing.M) {
	// As a program's main does: a child re-executed as a monitor (Options
	// with no MonitorCommand) runs it here and exits. SUP_TEST_NO_MONITOR_MAIN
	// plays a program that does not call it.
	if os.Getenv("SUP_TEST_NO_MONITOR_MAIN") == "" {
		MonitorMain()
	}
	switch os.Getenv(roleEnv) {
	case "monitor":
		if d, err := time.ParseDuration(os.Getenv(slowLogEnv)); err == nil {
			captureLog = func(r io.Reader, path string, opt logfile.CaptureOptions) error {
				return logfile.Capture(&slowReader{r: r, pause: d}, path, opt)
			}
		}
		os.Exit(RunMonitor(os.Stdin, os.Stdout))
	case "child":
		os.Exit(runChild(os.Getenv(childEnv)))
	case "stop":
		os.Exit(runStop())
	}
	os.Exit(m.Run())
}

// runStop is a CLI's stop in a process of its own (the read-only home
// tests run it in a mount namespace where the home is read-only): it
// stops SUP_TEST_NAME of the config SUP_TEST_CONFIG under the home
// SUP_TEST_HOME and prints the results as JSON, then the error.
func runStop() int {
	cfg, err := LoadConfig(os.Getenv("SUP_TEST_CONFIG"))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	sup, err := New(os.Getenv("SUP_TEST_HOME"), cfg, Options{})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	res, err := sup.Stop(context.Background(), []string{os.Getenv("SUP_TEST_NAME")}, StopOptions{Timeout: 10 * time.Second})
	data, _ := json.Marshal(res)
	fmt.Println(string(data))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	return 0
}

// runChild is a helper process. Modes (several, comma-separated):
//
//	sleep            run until signalled
//	sleepfor=D       sleep for duration D
//	ignore-term      ignore SIGTERM, then sleep
//	exit=N           print a line and exit with N
//	listen=ADDR      print "listening" and accept on ADDR until signalled
//	http=ADDR        serve HTTP 200 on ADDR until signalled
//	orphan           start a grandchild in its own process group (same session) that ignores SIGTERM
//	env=VAR          print VAR's value
//	print=TEXT       print TEXT
//	flood=RATE       print numbered 100-byte lines ("seq N ...") at RATE bytes/s, for ever
//	alloc=MB         allocate and touch MB MiB, 8 MiB at a time, printing the total so far
func runChild(modes string) int {
	for _, mode := range strings.Split(modes, ",") {
		name, arg, _ := strings.Cut(mode, "=")
		switch name {
		case "ignore-term":
			signal.Ignore(syscall.SIGTERM)
		case "exit":
			n, _ := strconv.Atoi(arg)
			fmt.Println("exiting with", n)
			return n
		case "listen":
			ln, err := net.Listen("tcp", arg)
			if err != nil {
				fmt.Println("listen:", err)
				return 1
			}
			fmt.Println("listening on", ln.Addr())
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					c.Close()
				}
			}()
		case "http":
			ln, err := net.Listen("tcp", arg)
			if err != nil {
				fmt.Println("listen:", err)
				return 1
			}
			fmt.Println("serving http on", ln.Addr())
			go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		case "orphan":
			exe, _ := os.Executable()
			cmd := exec.Command(exe)
			cmd.Env = append(os.Environ(), roleEnv+"=child", childEnv+"=ignore-term,print=ignoring,sleep")
			cmd.SysProcAttr = ownGroupAttr()
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				fmt.Println("orphan:", err)
				return 1
			}
			// Only once it ignores SIGTERM: a stop may signal it at once.
			bufio.NewReader(out).ReadString('\n')
			fmt.Println("grandchild", cmd.Process.Pid)
			// The session leader lives until the test has looked it up
			// (it closes our stdin), so a loaded machine cannot turn the
			// lookup into a race with our exit.
			_, _ = io.Copy(io.Discard, os.Stdin)
		case "env":
			fmt.Printf("%s=%s\n", arg, os.Getenv(arg))
		case "print":
			fmt.Println(arg)
		case "flood":
			flood(arg)
		case "alloc":
			mb, _ := strconv.Atoi(arg)
			var held [][]byte
			for total := 8; total <= mb; total += 8 {
				b := make([]byte, 8<<20)
				for i := range b { // touch every byte: resident, not just reserved
					b[i] = byte(i)
				}
				held = append(held, b)
				fmt.Println("allocated", total, "MiB")
			}
			fmt.Println("holding", len(held)*8, "MiB")
		case "sleep":
			time.Sleep(time.Hour)
		case "sleepfor":
			d, _ := time.ParseDuration(arg)
			time.Sleep(d)
		}
	}
	return 0
}

// flood prints numbered lines of 100 bytes at rate bytes per second (a
// size such as 200KB), paced every 10ms, until killed.
func flood(rate string) {
	n, _ := strconv.Atoi(strings.TrimSuffix(rate, "KB"))
	perTick := max(n*1024/100/100, 1) // lines per 10ms
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	seq := 0
	for t := time.NewTicker(10 * time.Millisecond); ; <-t.C {
		for range perTick {
			seq++
			fmt.Fprintf(w, "seq %-10d %s\n", seq, strings.Repeat(".", 84))
		}
		if w.Flush() != nil {
			os.Exit(3)
		}
	}
}
