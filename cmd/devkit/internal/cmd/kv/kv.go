// Package kv implements `devkit kv`: the server (`serve`), the client
// commands that talk to it over the TCP JSON protocol (`get`, `set`, `del`,
// `keys`, `ping`, `stats`, `bench`, `backup`, `migrate`) and the offline
// tools (`verify`, `repair`). One file per verb: XOptions (what the flags,
// args and environment gave, plus the dependencies from the
// cmdutil.Factory), NewCmdX(f, runF) and xRun(ctx, opts). The environment
// is read before runF, so the options say what the run will use.
package kv

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/kvstore/server"
	"github.com/devkit-go/devkit/kvstore/server/tcpjson"
)

// AddrEnv names the environment variable that sets the default --addr.
const AddrEnv = "DEVKIT_KV_ADDR"

// PasswordEnv names the environment variable holding the server's password:
// serve's --requirepass and the client commands' --password default to it.
const PasswordEnv = "DEVKIT_KV_PASSWORD"

// NewCmd builds `devkit kv` and its verbs.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := newKVNoun(f)
	cmd.AddCommand(
		NewCmdServe(f, nil),
		NewCmdGet(f, nil),
		NewCmdSet(f, nil),
		NewCmdDel(f, nil),
		NewCmdKeys(f, nil),
		NewCmdPing(f, nil),
		NewCmdStats(f, nil),
		NewCmdBench(f, nil),
		NewCmdBackup(f, nil),
		NewCmdMigrate(f, nil),
		NewCmdVerify(f, nil),
		NewCmdRepair(f, nil),
	)
	for _, verb := range cmd.Commands() {
		if verb.Flags().Lookup("addr") != nil {
			explainWrongListener(verb)
		}
	}
	return cmd
}

// explainWrongListener makes a client verb whose --addr answered in HTTP or
// RESP say which listener the client commands need: a newcomer's first
// guess is the server's --http port, and the client's own error can only
// say that the reply was not TCP JSON.
func explainWrongListener(verb *cobra.Command) {
	run := verb.RunE
	verb.RunE = func(cmd *cobra.Command, args []string) error {
		err := run(cmd, args)
		var pe *tcpjson.ProtocolError
		if !errors.As(err, &pe) {
			return err
		}
		listener := map[string]string{"HTTP": "--http", "RESP": "--resp"}[pe.Protocol]
		return fmt.Errorf("%s answered in %s: it is `devkit kv serve`'s %s listener (or another %s server), "+
			"and the client commands talk to its --tcp listener (default %s): pass that address with --addr or $%s",
			pe.Addr, pe.Protocol, listener, pe.Protocol, server.DefaultTCPAddr, AddrEnv)
	}
}

// newKVNoun builds the noun without its verbs.
func newKVNoun(_ *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "kv",
		Short: "A durable key-value store: the server and its client commands",
		Long: `devkit kv runs a durable key-value server (devkit kv serve) and talks to it.

The client commands speak the newline-delimited JSON protocol of the server's
--tcp listener; --addr (default ` + server.DefaultTCPAddr + `, or $` + AddrEnv + `) says where.
A key that does not exist makes get and del exit with code 3.`,
	}
}

// ClientOptions are what every client command shares.
type ClientOptions struct {
	IO *cmdutil.IOStreams
	// Dial connects to the server (the factory's KVClient; tcpjson.DialWith when nil).
	Dial func(ctx context.Context, addr string, opts tcpjson.DialOptions) (*tcpjson.Client, error)
	// Addr is --addr, else $DEVKIT_KV_ADDR when set and not empty.
	Addr    string
	Timeout time.Duration
	// Password authenticates to a server started with --requirepass:
	// --password, else $DEVKIT_KV_PASSWORD.
	Password string
	// TLS speaks TLS; TLSCA is a PEM file of the CAs to trust (implies TLS).
	TLS   bool
	TLSCA string
}

// bindClient takes the dependencies from f and, for the flags cmd was not
// given, the environment's values.
func (o *ClientOptions) bindClient(f *cmdutil.Factory, cmd *cobra.Command) {
	o.IO, o.Dial = f.IOStreams, f.KVClient
	if v, ok := f.LookupEnv(AddrEnv); ok && v != "" && !cmd.Flags().Changed("addr") {
		o.Addr = v
	}
	if v, ok := f.LookupEnv(PasswordEnv); ok && !cmd.Flags().Changed("password") {
		o.Password = v
	}
}

// dialOptions are the TLS and password settings of the flags and environment.
func (o *ClientOptions) dialOptions() (tcpjson.DialOptions, error) {
	var d tcpjson.DialOptions
	d.Password = o.Password
	if o.TLS || o.TLSCA != "" {
		d.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
		if o.TLSCA != "" {
			pem, err := os.ReadFile(o.TLSCA)
			if err != nil {
				return d, fmt.Errorf("--tls-ca: %w", err)
			}
			d.TLS.RootCAs = x509.NewCertPool()
			if !d.TLS.RootCAs.AppendCertsFromPEM(pem) {
				return d, fmt.Errorf("--tls-ca %s: no PEM certificate in it", o.TLSCA)
			}
		}
	}
	return d, nil
}

// addClientFlags registers --addr and --timeout.
func addClientFlags(cmd *cobra.Command, o *ClientOptions) {
	cmd.Flags().StringVar(&o.Addr, "addr", server.DefaultTCPAddr, "address of the server's TCP listener (env "+AddrEnv+")")
	cmdutil.DurationVar(cmd.Flags(), &o.Timeout, "timeout", 5*time.Second, "give up on the server after this long")
	cmd.Flags().StringVar(&o.Password, "password", "", "the server's password (--requirepass; env "+PasswordEnv+")")
	cmd.Flags().BoolVar(&o.TLS, "tls", false, "connect with TLS, trusting the system's CAs")
	cmd.Flags().StringVar(&o.TLSCA, "tls-ca", "", "connect with TLS, trusting the CA certificates in `FILE` (PEM)")
}

// connect dials the server; ctx carries --timeout for the whole command.
func (o *ClientOptions) connect(parent context.Context) (*tcpjson.Client, context.Context, context.CancelFunc, error) {
	var ctx context.Context
	var cancel context.CancelFunc
	if o.Timeout > 0 {
		ctx, cancel = context.WithTimeout(parent, o.Timeout)
	} else {
		ctx, cancel = context.WithCancel(parent)
	}
	addr := o.Addr
	dopts, err := o.dialOptions()
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	c, err := o.dial(ctx, addr, dopts)
	if err != nil {
		var se *tcpjson.Error
		if errors.As(err, &se) {
			cancel()
			return nil, nil, nil, fmt.Errorf("the server at %s refused the password (set --password or $%s): %w", addr, PasswordEnv, err)
		}
		cancel()
		return nil, nil, nil, fmt.Errorf("cannot reach the server at %s (is `devkit kv serve` running?): %w", addr, unwrapDial(err))
	}
	return c, ctx, cancel, nil
}

// dial connects with Dial, or tcpjson.DialWith when it is nil.
func (o *ClientOptions) dial(ctx context.Context, addr string, dopts tcpjson.DialOptions) (*tcpjson.Client, error) {
	if o.Dial == nil {
		return tcpjson.DialWith(ctx, addr, dopts)
	}
	return o.Dial(ctx, addr, dopts)
}

// unwrapDial drops the client's own prefix from a dial error.
func unwrapDial(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}

// isTerminal reports whether w is a terminal, where a trailing newline
// helps the reader; redirected output stays byte-exact. A character device
// is not enough (/dev/null is one): term asks the terminal driver.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
