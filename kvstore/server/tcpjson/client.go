package tcpjson

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/devkit-go/devkit/internal/dirsync"
	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/backend"
)

// Client is a connection to a tcpjson server. It is safe for concurrent
// use; requests on one Client are sent one at a time.
type Client struct {
	mu   sync.Mutex
	conn net.Conn
	r    *bufio.Reader
	w    *bufio.Writer
	enc  *json.Encoder
	err  error // sticky: a broken connection stays broken
}

// Dial connects to the server at addr.
func Dial(ctx context.Context, addr string) (*Client, error) {
	return DialWith(ctx, addr, DialOptions{})
}

// DialOptions say how to reach a server.
type DialOptions struct {
	// TLS, when set, speaks TLS with this configuration.
	TLS *tls.Config
	// Password, when set, authenticates the connection right after it opens.
	Password string
}

// DialWith connects to the server at addr with TLS and a password as o says.
func DialWith(ctx context.Context, addr string, o DialOptions) (*Client, error) {
	var conn net.Conn
	var err error
	if o.TLS != nil {
		d := tls.Dialer{Config: o.TLS}
		conn, err = d.DialContext(ctx, "tcp", addr)
	} else {
		var d net.Dialer
		conn, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("tcpjson: dial %s: %w", addr, err)
	}
	c := &Client{conn: conn, r: bufio.NewReaderSize(conn, 64<<10), w: bufio.NewWriterSize(conn, 64<<10)}
	c.enc = json.NewEncoder(c.w)
	c.enc.SetEscapeHTML(false)
	if o.Password != "" {
		if _, err := c.call(ctx, Request{Op: OpAuth, Password: o.Password}); err != nil {
			conn.Close()
			return nil, fmt.Errorf("tcpjson: auth: %w", err)
		}
	}
	return c, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Error is a failure the server reported. It matches the kvstore sentinel
// with the same code (errors.Is(err, kvstore.ErrKeyTooLarge), ...).
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return "tcpjson: server: " + e.Message }

// Is maps the server's code to the engine's sentinel errors.
func (e *Error) Is(target error) bool {
	switch target {
	case kvstore.ErrNotFound:
		return e.Code == backend.CodeNotFound
	case kvstore.ErrEmptyKey:
		return e.Code == backend.CodeEmptyKey
	case kvstore.ErrKeyTooLarge:
		return e.Code == backend.CodeKeyTooLarge
	case kvstore.ErrValueTooLarge:
		return e.Code == backend.CodeValueTooLarge
	case kvstore.ErrReadOnly:
		return e.Code == backend.CodeReadOnly
	case kvstore.ErrClosed:
		return e.Code == backend.CodeClosed
	}
	return false
}

// Do sends req and returns the server's reply, whether OK or not; err is
// only for a failure to talk to the server. ctx's deadline bounds the round trip.
func (c *Client) Do(ctx context.Context, req Request) (Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return Response{}, c.err
	}
	resp, err := c.roundTrip(ctx, &req)
	if err != nil {
		c.err = fmt.Errorf("tcpjson: %w", err)
		c.conn.Close()
		return Response{}, c.err
	}
	return resp, nil
}

func (c *Client) roundTrip(ctx context.Context, req *Request) (Response, error) {
	deadline, _ := ctx.Deadline()
	c.conn.SetDeadline(deadline)
	// Cancellation interrupts blocked I/O through a deadline in the past;
	// wait for that to be done so it cannot hit the next request.
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		c.conn.SetDeadline(time.Unix(1, 0))
		close(fired)
	})
	defer func() {
		if !stop() {
			<-fired
		}
	}()

	if err := c.enc.Encode(req); err != nil {
		return Response{}, err
	}
	if err := c.w.Flush(); err != nil {
		return Response{}, ctxErr(ctx, err)
	}
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		return Response{}, ctxErr(ctx, err)
	}
	return c.decodeReply(line)
}

// ctxErr prefers ctx's error to the I/O error its cancellation caused.
func ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	// The connection's deadline is the context's, and may fire a moment
	// before the context reports it.
	var ne net.Error
	if d, ok := ctx.Deadline(); ok && errors.As(err, &ne) && ne.Timeout() && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return err
}

// call sends req and turns a failure the server reported into an *Error.
func (c *Client) call(ctx context.Context, req Request) (Response, error) {
	resp, err := c.Do(ctx, req)
	if err != nil {
		return resp, err
	}
	if !resp.OK {
		return resp, &Error{Code: resp.Code, Message: resp.Error}
	}
	return resp, nil
}

// keyRequest puts key in req as text or base64.
func keyRequest(op string, key []byte) Request {
	req := Request{Op: op}
	if isText(key) {
		req.Key = string(key)
	} else {
		req.KeyB64 = key
	}
	return req
}

// Get returns the value of key, or an error matching kvstore.ErrNotFound.
func (c *Client) Get(ctx context.Context, key []byte) ([]byte, error) {
	resp, err := c.call(ctx, keyRequest(OpGet, key))
	if err != nil {
		return nil, err
	}
	if resp.Found == nil || !*resp.Found {
		return nil, fmt.Errorf("tcpjson: %q: %w", key, kvstore.ErrNotFound)
	}
	return resp.value(), nil
}

// Set stores value under key; it returns once the server's engine
// acknowledged the write under its sync policy.
func (c *Client) Set(ctx context.Context, key, value []byte) error {
	req := keyRequest(OpSet, key)
	if isText(value) {
		s := string(value)
		req.Value = &s
	} else {
		req.ValueB64 = &value
	}
	_, err := c.call(ctx, req)
	return err
}

// Delete removes key and reports whether it existed.
func (c *Client) Delete(ctx context.Context, key []byte) (existed bool, err error) {
	resp, err := c.call(ctx, keyRequest(OpDelete, key))
	if err != nil {
		return false, err
	}
	return resp.Found != nil && *resp.Found, nil
}

// Ping checks that the server answers.
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.call(ctx, Request{Op: OpPing})
	return err
}

// Stats returns the server's engine counters.
func (c *Client) Stats(ctx context.Context) (kvstore.Stats, error) {
	resp, err := c.call(ctx, Request{Op: OpStats})
	if err != nil {
		return kvstore.Stats{}, err
	}
	if resp.Stats == nil {
		return kvstore.Stats{}, errors.New("tcpjson: stats reply without stats")
	}
	return *resp.Stats, nil
}

// KeysPage is a page of keys; Next is the cursor of the next page, nil on the last.
type KeysPage struct {
	Keys [][]byte
	Next []byte
}

// scanRequest is the OpKeys request for opts: prefix and cursor as text
// when they are UTF-8, base64 otherwise; values asks for entries.
func scanRequest(opts kvstore.ScanOptions, values bool) Request {
	req := Request{Op: OpKeys, Limit: opts.Limit, Values: values}
	if isText(opts.Prefix) {
		req.Prefix = string(opts.Prefix)
	} else {
		req.PrefixB64 = opts.Prefix
	}
	if isText(opts.After) {
		req.After = string(opts.After)
	} else {
		req.AfterB64 = opts.After
	}
	return req
}

// Keys returns a page of keys in byte order that start with opts.Prefix,
// after opts.After; the server caps opts.Limit.
func (c *Client) Keys(ctx context.Context, opts kvstore.ScanOptions) (KeysPage, error) {
	req := scanRequest(opts, false)
	resp, err := c.call(ctx, req)
	if err != nil {
		return KeysPage{}, err
	}
	keys, next := resp.keys()
	return KeysPage{Keys: keys, Next: next}, nil
}

// Entries returns a page of entries (key, value, expiry) in byte order, as
// Keys pages keys: pass the returned next as opts.After for the next page.
func (c *Client) Entries(ctx context.Context, opts kvstore.ScanOptions) (entries []kvstore.Entry, next []byte, err error) {
	req := scanRequest(opts, true)
	resp, err := c.call(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	_, next = resp.keys()
	entries = make([]kvstore.Entry, len(resp.Entries))
	for i, e := range resp.Entries {
		entries[i] = e.Entry()
	}
	return entries, next, nil
}

// Backup streams a consistent checkpoint of the server's store into dir
// (created; it must be empty or not exist): a data directory that
// kvstore.Open and kvstore.Verify accept, stored only after its checksum
// passed (kvstore.RestoreCheckpoint). The server's writers keep going.
// It returns the file written.
func (c *Client) Backup(ctx context.Context, dir string) ([]BackupFile, error) {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("tcpjson: backup: %s is not empty", dir)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return nil, c.err
	}
	files, err := c.backup(ctx, dir)
	var se *Error
	if err != nil && !errors.As(err, &se) {
		c.err = fmt.Errorf("tcpjson: %w", err)
		c.conn.Close()
	}
	return files, err
}

func (c *Client) backup(ctx context.Context, dir string) ([]BackupFile, error) {
	deadline, _ := ctx.Deadline()
	c.conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { c.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := c.enc.Encode(Request{Op: OpBackup}); err != nil {
		return nil, err
	}
	if err := c.w.Flush(); err != nil {
		return nil, ctxErr(ctx, err)
	}
	resp, err := c.readResponse()
	if err != nil {
		return nil, ctxErr(ctx, err)
	}
	if !resp.OK {
		return nil, &Error{Code: resp.Code, Message: resp.Error}
	}
	if resp.Stream != "chunked" {
		return nil, fmt.Errorf("bad backup reply: no stream")
	}
	// The chunks feed RestoreCheckpoint, which checks the checksum before
	// it keeps anything.
	chunks := &chunkReader{r: c.r}
	info, rerr := kvstore.RestoreCheckpoint(chunks, dir)
	if rerr == nil {
		// The stream must end where the checkpoint does.
		n, err := io.Copy(io.Discard, chunks)
		if err != nil {
			return nil, fmt.Errorf("backup stream: %w", err)
		}
		if n != 0 {
			return nil, fmt.Errorf("backup stream: %d bytes after the checkpoint", n)
		}
	} else if chunks.err != nil || !chunks.done {
		return nil, ctxErr(ctx, errors.Join(rerr, chunks.err))
	}
	trailer, err := c.readResponse()
	if err != nil {
		return nil, ctxErr(ctx, err)
	}
	if !trailer.OK {
		return nil, &Error{Code: trailer.Code, Message: trailer.Error}
	}
	if rerr != nil {
		return nil, rerr
	}
	files := trailer.Files
	for i := range files {
		if files[i].Data == nil {
			continue
		}
		if err := writeBackupFile(dir, files[i]); err != nil {
			return nil, err
		}
		files[i].Name, files[i].Data = filepath.Join(dir, files[i].Name), nil
	}
	if len(files) == 1 {
		files[0].Name = info.Path
	}
	return files, nil
}

func (c *Client) readResponse() (Response, error) {
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		return Response{}, err
	}
	return c.decodeReply(line)
}

// writeBackupFile stores a file the trailer carried in the backup's
// directory: a temporary file written and synced, renamed into place, then
// the directory synced. Its name must be a plain file name: a server
// cannot make the client write outside dir.
func writeBackupFile(dir string, f BackupFile) error {
	if f.Name == "" || f.Name != filepath.Base(f.Name) || f.Name == "." || f.Name == ".." || strings.ContainsAny(f.Name, `/\`) {
		return fmt.Errorf("backup stream: bad file name %q", f.Name)
	}
	tmp, err := os.CreateTemp(dir, f.Name+".*.tmp")
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	_, err = tmp.Write(f.Data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, f.Name))
	}
	if err == nil {
		err = dirsync.Sync(dir)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("backup: write %s: %w", f.Name, err)
	}
	return nil
}

// ProtocolError is a reply in another protocol than TCP JSON: the address
// is another kind of listener (a KV server's HTTP or RESP one, or another
// server altogether), so no request sent there can succeed.
type ProtocolError struct {
	Addr     string // the address that answered
	Protocol string // "HTTP" or "RESP"
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("%s answered in %s, not TCP JSON: it is not a TCP JSON listener", e.Addr, e.Protocol)
}

// decodeReply decodes one reply line, naming the protocol of a reply that
// is not JSON when it is one the KV server also speaks.
func (c *Client) decodeReply(line []byte) (Response, error) {
	var resp Response
	err := json.Unmarshal(line, &resp)
	if err == nil {
		return resp, nil
	}
	switch {
	case strings.HasPrefix(string(line), "HTTP/"):
		return Response{}, &ProtocolError{Addr: c.conn.RemoteAddr().String(), Protocol: "HTTP"}
	case len(line) > 0 && strings.IndexByte("+-:$*", line[0]) >= 0:
		// A RESP server reads the JSON line as an inline command and answers with a RESP type byte.
		return Response{}, &ProtocolError{Addr: c.conn.RemoteAddr().String(), Protocol: "RESP"}
	}
	return Response{}, fmt.Errorf("bad reply: %w", err)
}

// chunkReader reads "<n>\n" + n bytes frames up to the "0\n" frame.
type chunkReader struct {
	r    *bufio.Reader
	left int64
	done bool
	err  error
}

// maxChunk bounds one frame, so a broken server cannot make the client
// wait for an absurd length.
const maxChunk = 64 << 20

func (cr *chunkReader) Read(p []byte) (int, error) {
	for cr.left == 0 {
		if cr.done {
			return 0, io.EOF
		}
		if cr.err != nil {
			return 0, cr.err
		}
		line, err := cr.r.ReadString('\n')
		if err != nil {
			cr.err = err
			return 0, err
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(line, "\n"), 10, 64)
		if err != nil || n < 0 || n > maxChunk {
			cr.err = fmt.Errorf("bad backup chunk header %q", line)
			return 0, cr.err
		}
		if n == 0 {
			cr.done = true
			return 0, io.EOF
		}
		cr.left = n
	}
	if int64(len(p)) > cr.left {
		p = p[:cr.left]
	}
	n, err := cr.r.Read(p)
	cr.left -= int64(n)
	if err != nil {
		cr.err = err
		if errors.Is(err, io.EOF) {
			cr.err = io.ErrUnexpectedEOF
		}
		return n, cr.err
	}
	return n, nil
}
