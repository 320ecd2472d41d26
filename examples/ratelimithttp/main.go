// Command ratelimithttp is a plain net/http server with the ratelimit
// middleware in front of its handlers: a policy (inline YAML here), an
// in-process store, and middleware.New(...).Handler wrapping a ServeMux.
//
//	go run ./examples/ratelimithttp                          # walk-through on a free port, then exit
//	go run ./examples/ratelimithttp -listen 127.0.0.1:8080   # serve until Ctrl-C
//
// The walk-through sends 7 requests as one user to GET /hello, limited to 5 a
// minute: 5 pass, the next are 429 with Retry-After and a problem+json body.
// It exits 1 if the server answers anything else.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/memory"
	"github.com/devkit-go/devkit/ratelimit/middleware"
	"github.com/devkit-go/devkit/ratelimit/policy"
)

// policyYAML is the server's policy: /hello 5 a minute per user and client
// address, /health never limited. The same format as examples/policies/*.yaml.
const policyYAML = `
version: 1
identity:
  trusted_proxies: [127.0.0.1/32]
  user_header: X-User-ID
rules:
  - {name: health, paths: [/health], skip: true}
  - name: hello
    paths: [/hello]
    key: [ip, user]
    limits:
      - {algorithm: fixed-window, limit: 5, window: 1m}
`

func main() {
	listen := flag.String("listen", "", "serve on this address until interrupted (default: run the walk-through and exit)")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if *listen != "" {
		err = serve(ctx, *listen, logger)
	} else {
		err = walkThrough(ctx, os.Stdout, logger)
	}
	if err != nil {
		logger.Error("ratelimithttp", "err", err)
		os.Exit(1)
	}
}

// newHandler builds the application (a ServeMux) behind the limiter middleware.
func newHandler(logger *slog.Logger) (http.Handler, error) {
	p, err := policy.Parse("ratelimithttp policy", []byte(policyYAML))
	if err != nil {
		return nil, err
	}
	limiter := ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello, %s\n", r.Header.Get("X-User-ID"))
	})
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	return middleware.New(limiter, p, middleware.Options{Logger: logger}).Handler(mux), nil
}

// serve runs the server on addr until ctx ends.
func serve(ctx context.Context, addr string, logger *slog.Logger) error {
	h, err := newHandler(logger)
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	logger.Info("serving", "addr", addr, "try", "curl -i -H 'X-User-ID: ada' http://"+addr+"/hello")
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}

// walkThrough starts the server on a free 127.0.0.1 port, sends 7 requests as
// one user, prints what came back, and checks it: 5 × 200, then 429s.
func walkThrough(ctx context.Context, out io.Writer, logger *slog.Logger) error {
	h, err := newHandler(logger)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()

	url := "http://" + l.Addr().String() + "/hello"
	fmt.Fprintf(out, "GET %s as X-User-ID: ada, limited to 5 a minute:\n", url)
	var last []byte
	for i := 1; i <= 7; i++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		req.Header.Set("X-User-ID", "ada")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		last, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "  request %d: %d  X-RateLimit-Remaining: %s", i, resp.StatusCode, resp.Header.Get("X-RateLimit-Remaining"))
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			fmt.Fprintf(out, "  Retry-After: %s", ra)
		}
		fmt.Fprintln(out)
		want := http.StatusOK
		if i > 5 {
			want = http.StatusTooManyRequests
		}
		if resp.StatusCode != want || (want == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "") {
			return fmt.Errorf("request %d: got %d (Retry-After %q), want %d", i, resp.StatusCode, resp.Header.Get("Retry-After"), want)
		}
	}
	fmt.Fprintf(out, "the 429 body (RFC 9457 problem+json):\n  %s\n", last)
	if len(last) == 0 {
		return errors.New("the 429 had no body")
	}
	return nil
}
