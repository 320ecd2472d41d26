// Command kvembed shows the kvstore engine embedded in a program, and what
// its strict sync policy promises: a child process writes from several
// goroutines and reports every acknowledged write; the parent kills it with
// SIGKILL mid-write, reopens the data directory and checks that every
// acknowledged write is there.
//
//	go run ./examples/kvembed [-dir DIR] [-writers 8] [-kill-after 300ms]
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/devkit-go/devkit/kvstore"
)

const childEnv = "KVEMBED_CHILD_DIR"

func main() {
	if dir := os.Getenv(childEnv); dir != "" {
		if err := child(dir, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		return
	}
	dir := flag.String("dir", "", "data directory (default: a new temporary directory, removed at the end)")
	writers := flag.Int("writers", 8, "concurrent writers in the child")
	killAfter := flag.Duration("kill-after", 300*time.Millisecond, "how long the child writes before it is killed")
	flag.Parse()
	if err := run(os.Stdout, *dir, *writers, *killAfter); err != nil {
		fmt.Fprintln(os.Stderr, "kvembed:", err)
		os.Exit(1)
	}
}

// child writes order:<writer>:<n> keys until it is killed, printing
// "ack KEY VALUE" after each write the engine acknowledged.
func child(dir string, out io.Writer) error {
	writers := 8
	if v := os.Getenv("KVEMBED_WRITERS"); v != "" {
		if _, err := fmt.Sscan(v, &writers); err != nil {
			return fmt.Errorf("KVEMBED_WRITERS=%q: %w", v, err)
		}
	}
	db, err := kvstore.Open(dir, kvstore.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				key, value := fmt.Sprintf("order:%d:%06d", w, n), fmt.Sprintf("paid-%d-%d", w, n)
				if err := db.Set([]byte(key), []byte(value)); err != nil {
					fmt.Fprintln(os.Stderr, "set:", err)
					os.Exit(1)
				}
				mu.Lock()
				fmt.Fprintf(out, "ack %s %s\n", key, value)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return nil
}

func run(out io.Writer, dir string, writers int, killAfter time.Duration) error {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "kvembed-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "1. A child process opens %s under the strict sync policy and writes from %d goroutines.\n", dir, writers)
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), childEnv+"="+dir, fmt.Sprintf("KVEMBED_WRITERS=%d", writers))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	acked := map[string]string{}
	var kill sync.Once
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		kill.Do(func() { time.AfterFunc(killAfter, func() { _ = cmd.Process.Kill() }) })
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "ack" {
			acked[f[1]] = f[2]
		}
	}
	waitErr := cmd.Wait()
	var exitErr *exec.ExitError
	if !errors.As(waitErr, &exitErr) {
		return fmt.Errorf("the child was not killed as planned: %w", waitErr)
	}
	fmt.Fprintf(out, "2. After %v the child was killed with SIGKILL (%v); it had acknowledged %d writes.\n", killAfter, exitErr, len(acked))

	start := time.Now()
	db, err := kvstore.Open(dir, kvstore.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return fmt.Errorf("reopen: %w", err)
	}
	defer db.Close()
	st := db.Stats()
	fmt.Fprintf(out, "3. Reopened in %v: %d records replayed, %d keys, torn tail cut: %d bytes.\n",
		time.Since(start).Round(time.Millisecond), st.ReplayedRecords, st.Keys, st.TornTailBytes)
	missing := 0
	for k, v := range acked {
		got, err := db.Get([]byte(k))
		if err != nil || string(got) != v {
			missing++
			fmt.Fprintf(out, "   LOST: %s = %q (%v), acknowledged %q\n", k, got, err, v)
		}
	}
	if missing > 0 {
		return fmt.Errorf("%d of %d acknowledged writes were lost", missing, len(acked))
	}
	fmt.Fprintf(out, "4. All %d acknowledged writes are there: nothing acknowledged was lost.\n", len(acked))
	return nil
}
