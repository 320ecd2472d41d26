// Package dash implements `devkit dash`, the web view of a stack: the same
// panels as `devkit top`, served read-only with net/http, html/template and
// server-sent events, its assets embedded (no build step).
package dash

// Nothing runs without a reader: each /events stream samples the stack
// for its own tab and stops when the tab goes, and a process's log is
// followed while a tab reads it (and for a short grace after the last one
// leaves, so that a page reload resumes from the same line numbers).

import (
	"context"
	"crypto/subtle"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmd/sup"
	"github.com/devkit-go/devkit/cmd/devkit/internal/cmd/top"
	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/cmd/devkit/internal/live"
	"github.com/devkit-go/devkit/supervisor"
)

//go:embed assets
var assets embed.FS

// Options are the inputs of `devkit dash`.
type Options struct {
	IO   *cmdutil.IOStreams
	Open func() (*supervisor.Supervisor, error)
	// Listen is the address to serve on; a non-loopback one needs Token.
	Listen string
	// Token, when set, is required of every request (a bearer header, or
	// ?token= once, which sets a cookie for the page's own requests).
	Token                                    string
	KVURL, KVToken, GatewayURL, GatewayToken string
	Interval                                 time.Duration
}

// defaultListen is a loopback address: the view is for this machine
// unless a token says otherwise.
const defaultListen = "127.0.0.1:7070"

// NewCmd builds `devkit dash`; runF, when not nil, receives the options instead of run.
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "dash [-c ops.yaml] [--listen ADDR]",
		Short: "Watch the stack live in the browser: processes, logs, rate limits, the KV store",
		Long: `devkit dash serves a read-only web page with the panels of 'devkit top' —
processes, live logs, the rate limiter and the KV store, with charts of the
last minutes — on --listen (default ` + defaultListen + `, printed at start).
It finds the stack as 'devkit sup' does (-c, --project, the same home) and
the KV server and gateway from the YAML or --kv and --gateway.

A non-loopback --listen needs --token (or $DEVKIT_DASH_TOKEN): open
http://ADDR/?token=TOKEN once; the page keeps it in a cookie. The page
samples the stack only while it is open, and a reload resumes the log where
it was (server-sent events with Last-Event-ID).`,
		Example: `  devkit dash -c examples/stack/ops.yaml
  devkit dash --listen 0.0.0.0:7070 --token "$(openssl rand -hex 16)"`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Interval <= 0 {
				return cmdutil.UsageErrorf("--interval must be positive")
			}
			if opts.Token == "" {
				opts.Token = f.Getenv("DEVKIT_DASH_TOKEN")
			}
			if err := checkListen(opts.Listen, opts.Token); err != nil {
				return err
			}
			opts.Open = func() (*supervisor.Supervisor, error) { return sup.OpenProject(f, cmd, false) }
			top.TokensFromEnv(f, &opts.KVToken, &opts.GatewayToken)
			if runF == nil {
				runF = run
			}
			return runF(cmd.Context(), opts)
		},
	}
	top.AddSourceFlags(cmd, &opts.KVURL, &opts.GatewayURL, &opts.KVToken, &opts.GatewayToken, &opts.Interval)
	cmd.Flags().StringVar(&opts.Listen, "listen", defaultListen, "address to serve the page on")
	cmd.Flags().StringVar(&opts.Token, "token", "", "token every request must carry (required off loopback; default $DEVKIT_DASH_TOKEN)")
	return cmd
}

// checkListen refuses a non-loopback address without a token.
func checkListen(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return cmdutil.UsageErrorf("--listen %q: %v", addr, err)
	}
	if token != "" || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return cmdutil.UsageErrorf("--listen %s is reachable from other machines: give --token (or $DEVKIT_DASH_TOKEN)", addr)
}

func run(ctx context.Context, opts *Options) error {
	src, err := top.Sources(opts.Open, opts.KVURL, opts.GatewayURL, opts.KVToken, opts.GatewayToken)
	if err != nil {
		return err
	}
	h, err := newHandler(ctx, src, opts.Interval, opts.Token)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(opts.IO.Out, "devkit dash: http://%s/\n", ln.Addr())
	ctx, stop := interruptible(ctx)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx) // streams end with their requests' contexts
	}()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}

// handler serves the page, its assets and its two event streams.
type handler struct {
	mux      *http.ServeMux
	src      live.Sources
	interval time.Duration
	token    string
	page     *template.Template
	logs     *logHub
}

func newHandler(ctx context.Context, src live.Sources, interval time.Duration, token string) (*handler, error) {
	page, err := template.ParseFS(assets, "assets/index.html")
	if err != nil {
		return nil, err
	}
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, err
	}
	h := &handler{mux: http.NewServeMux(), src: src, interval: interval, token: token, page: page,
		logs: newLogHub(ctx, src.Sup, 30*time.Second)}
	h.mux.HandleFunc("GET /{$}", h.index)
	h.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	h.mux.HandleFunc("GET /events", h.events)
	h.mux.HandleFunc("GET /logs", h.logStream)
	h.mux.HandleFunc("GET /snapshot", h.snapshot)
	return h, nil
}

const tokenCookie = "devkit_dash_token"

// ServeHTTP checks the token, then routes. The page is read-only: every
// route is a GET.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; img-src 'self' data:")
	if h.token != "" {
		got := ""
		if c, err := r.Cookie(tokenCookie); err == nil {
			got = c.Value
		}
		if b, ok := bearer(r); ok {
			got = b
		}
		if q := r.URL.Query().Get("token"); q != "" {
			got = q
			if subtle.ConstantTimeCompare([]byte(q), []byte(h.token)) == 1 {
				http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: q, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			}
		}
		if subtle.ConstantTimeCompare([]byte(got), []byte(h.token)) != 1 {
			http.Error(w, "a token is required: open /?token=TOKEN (devkit dash --token)", http.StatusUnauthorized)
			return
		}
	}
	h.mux.ServeHTTP(w, r)
}

func bearer(r *http.Request) (string, bool) {
	const prefix = "Bearer "
	a := r.Header.Get("Authorization")
	if len(a) > len(prefix) && a[:len(prefix)] == prefix {
		return a[len(prefix):], true
	}
	return "", false
}
