// Package kv implements `devkit kv`: the server (`serve`) and the client
// commands that talk to it over the TCP JSON protocol (`get`, `set`, `del`,
// `keys`, `ping`, `stats`).
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
func NewCmd(ios *cmdutil.IOStreams) *cobra.Command { return newKVCmd(ios, os.LookupEnv) }

// newKVCmd builds the command tree reading the environment through lookupEnv.
func newKVCmd(ios *cmdutil.IOStreams, lookupEnv func(string) (string, bool)) *cobra.Command {
	client := ClientOptions{IO: ios, LookupEnv: lookupEnv}
	cmd := &cobra.Command{
		Use:   "kv",
		Short: "A durable key-value store: the server and its client commands",
		Long: `devkit kv runs a durable key-value server (devkit kv serve) and talks to it.

The client commands speak the newline-delimited JSON protocol of the server's
--tcp listener; --addr (default ` + server.DefaultTCPAddr + `, or $` + AddrEnv + `) says where.
A key that does not exist makes get and del exit with code 3.`,
	}
	cmd.AddCommand(
		newServeCmd(ios, lookupEnv),
		newGetCmd(client, nil),
		newSetCmd(client, nil),
		newDelCmd(client, nil),
		newKeysCmd(client, nil),
		newPingCmd(client, nil),
		newStatsCmd(client, nil),
		newBenchCmd(client, nil),
		newBackupCmd(client, nil),
		newMigrateCmd(client, nil),
		newVerifyCmd(ios),
		newRepairCmd(ios),
	)
	return cmd
}

// ClientOptions are what every client command shares.
type ClientOptions struct {
	IO      *cmdutil.IOStreams
	Addr    string
	Timeout time.Duration
	// Password authenticates to a server started with --requirepass.
	Password string
	// TLS speaks TLS; TLSCA is a PEM file of the CAs to trust (implies TLS).
	TLS   bool
	TLSCA string
	// LookupEnv reads the environment; os.LookupEnv when nil.
	LookupEnv func(string) (string, bool)
	// addrSet, passwordSet say the flag was given, so the environment does not apply.
	addrSet, passwordSet bool
}

func (o *ClientOptions) lookup(name string) (string, bool) {
	if o.LookupEnv == nil {
		return os.LookupEnv(name)
	}
	return o.LookupEnv(name)
}

// dialOptions are the TLS and password settings of the flags and environment.
func (o *ClientOptions) dialOptions() (tcpjson.DialOptions, error) {
	var d tcpjson.DialOptions
	d.Password = o.Password
	if !o.passwordSet {
		if v, ok := o.lookup(PasswordEnv); ok {
			d.Password = v
		}
	}
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
	cmd.PreRun = func(cmd *cobra.Command, _ []string) {
		o.addrSet = cmd.Flags().Changed("addr")
		o.passwordSet = cmd.Flags().Changed("password")
	}
}

// address is --addr, or the environment's when --addr was not given.
func (o *ClientOptions) address() string {
	if o.addrSet {
		return o.Addr
	}
	if v, ok := o.lookup(AddrEnv); ok && v != "" {
		return v
	}
	if o.Addr == "" {
		return server.DefaultTCPAddr
	}
	return o.Addr
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
	addr := o.address()
	dopts, err := o.dialOptions()
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	c, err := tcpjson.DialWith(ctx, addr, dopts)
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

// unwrapDial drops the client's own prefix from a dial error.
func unwrapDial(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}

// isTerminal reports whether w is a terminal, where a trailing newline
// helps the reader; redirected output stays byte-exact.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
