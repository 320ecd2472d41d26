// Command hit is the demo's HTTP client: a curl that checks what it gets.
// It sends one request (or -n of them), prints what came back, and exits 1
// when the answer is not the one -expect names, so examples/demo.sh can
// say "this is what happens" and fail when it does not.
//
//	hit -X PUT -H 'X-Workspace-ID: acme' -d hello -expect 204 http://127.0.0.1:8080/keys/greeting
//	hit -X PUT -n 25 -expect 204=20,429=5 http://127.0.0.1:8080/keys/counter
//	hit -i -body hello http://127.0.0.1:8080/keys/greeting
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"time"
)

// headerList collects repeated -H flags.
type headerList []string

func (h *headerList) String() string     { return strings.Join(*h, ", ") }
func (h *headerList) Set(v string) error { *h = append(*h, v); return nil }

// options is one run of hit.
type options struct {
	method  string
	headers headerList
	data    string
	n       int
	expect  string
	body    string
	show    bool
	grep    string
	has     headerList
	url     string
}

func main() {
	var o options
	fs := flag.NewFlagSet("hit", flag.ContinueOnError)
	fs.StringVar(&o.method, "X", "", "method (default GET, or PUT with -d)")
	fs.Var(&o.headers, "H", "request header 'Name: value' (repeatable)")
	fs.StringVar(&o.data, "d", "", "request body")
	fs.IntVar(&o.n, "n", 1, "send the request this many times and count the answers")
	fs.StringVar(&o.expect, "expect", "", "expected status (single request) or counts such as 204=20,429=5")
	fs.StringVar(&o.body, "body", "", "expected response body (single request)")
	fs.BoolVar(&o.show, "i", false, "print the rate-limit headers and the body of the (last) answer")
	fs.StringVar(&o.grep, "grep", "", "print only body lines starting with one of these comma-separated prefixes")
	fs.Var(&o.has, "has", "expected response header 'Name: value' on the (last) answer (repeatable)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: hit [flags] URL")
		os.Exit(2)
	}
	o.url = fs.Arg(0)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "hit:", err)
		os.Exit(1)
	}
}

// shownHeaders are the response headers -i prints, in this order.
var shownHeaders = []string{"Content-Type", "X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset",
	"Ratelimit-Policy", "Ratelimit", "Retry-After"}

func run(ctx context.Context, w io.Writer, o options) error {
	method := o.method
	if method == "" {
		method = http.MethodGet
		if o.data != "" {
			method = http.MethodPut
		}
	}
	client := &http.Client{Timeout: 10 * time.Second}
	counts := map[int]int{}
	var last *http.Response
	var lastBody []byte
	for i := 0; i < o.n; i++ {
		req, err := http.NewRequestWithContext(ctx, method, o.url, strings.NewReader(o.data))
		if err != nil {
			return err
		}
		for _, h := range o.headers {
			name, value, ok := strings.Cut(h, ":")
			if !ok {
				return fmt.Errorf("header %q: want 'Name: value'", h)
			}
			req.Header.Set(strings.TrimSpace(name), strings.TrimSpace(value))
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		counts[resp.StatusCode]++
		last, lastBody = resp, body
	}
	path := o.url
	if i := strings.Index(path, "://"); i >= 0 {
		if j := strings.IndexByte(path[i+3:], '/'); j >= 0 {
			path = path[i+3+j:]
		}
	}
	fmt.Fprintf(w, "%s %s", method, path)
	if o.n > 1 {
		fmt.Fprintf(w, " ×%d → %s\n", o.n, formatCounts(counts))
	} else {
		fmt.Fprintf(w, " → %s\n", last.Status)
	}
	if o.show {
		for _, h := range shownHeaders {
			if v := last.Header.Get(h); v != "" {
				fmt.Fprintf(w, "  %s: %s\n", h, v)
			}
		}
	}
	if o.show || o.grep != "" {
		printBody(w, lastBody, o.grep)
	}
	return check(o, counts, last.Header, lastBody)
}

// printBody prints the body indented, or only its lines starting with grep.
func printBody(w io.Writer, body []byte, grep string) {
	text := strings.TrimRight(string(body), "\n")
	if text == "" {
		return
	}
	for _, line := range strings.Split(text, "\n") {
		if grep == "" || hasAnyPrefix(line, strings.Split(grep, ",")) {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
}

// formatCounts prints status counts in status order: "204×20 429×5".
func formatCounts(counts map[int]int) string {
	codes := make([]int, 0, len(counts))
	for c := range counts {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = fmt.Sprintf("%d×%d", c, counts[c])
	}
	return strings.Join(parts, " ")
}

// check compares the answers with -expect and -body.
func check(o options, counts map[int]int, lastHeader http.Header, lastBody []byte) error {
	for _, h := range o.has {
		name, value, _ := strings.Cut(h, ":")
		if got := lastHeader.Get(strings.TrimSpace(name)); got != strings.TrimSpace(value) {
			return fmt.Errorf("header %s is %q, expected %q", strings.TrimSpace(name), got, strings.TrimSpace(value))
		}
	}
	if o.body != "" && string(lastBody) != o.body {
		return fmt.Errorf("body is %q, expected %q", lastBody, o.body)
	}
	if o.expect == "" {
		return nil
	}
	want := map[int]int{}
	for _, part := range strings.Split(o.expect, ",") {
		code, n, hasCount := strings.Cut(part, "=")
		if !hasCount {
			n = strconv.Itoa(o.n)
		}
		c, err1 := strconv.Atoi(code)
		k, err2 := strconv.Atoi(n)
		if err := errors.Join(err1, err2); err != nil {
			return fmt.Errorf("-expect %q: %w", o.expect, err)
		}
		want[c] = k
	}
	if formatCounts(want) != formatCounts(counts) {
		return fmt.Errorf("got %s, expected %s", formatCounts(counts), formatCounts(want))
	}
	return nil
}

// hasAnyPrefix reports whether line starts with one of prefixes.
func hasAnyPrefix(line string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}
