package tcpjson

// Invariant: a reply with "ok":true to a set or delete is written only after
// the engine acknowledged the write under its sync policy, and replies leave
// in the order their requests arrived on the connection.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/backend"
	"github.com/devkit-go/devkit/kvstore/server/internal/connserver"
	"github.com/devkit-go/devkit/kvstore/server/metrics"
)

// Defaults of Options.
const (
	DefaultMaxLineBytes = 16 << 20
	DefaultIdleTimeout  = 5 * time.Minute
	DefaultWriteTimeout = 30 * time.Second
	DefaultMaxConns     = 1024
	// DefaultHandshakeTimeout bounds the wait for a connection's first request.
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultMaxScanLimit     = 10000
)

// Options configure a Server. The zero value takes the defaults; a negative
// timeout or MaxConns means no limit.
type Options struct {
	// MaxLineBytes bounds one request line; a longer line is skipped and
	// answered with code line_too_long. 16 MiB when zero.
	MaxLineBytes int
	// IdleTimeout closes a connection that sends no request for this long. 5m when zero.
	IdleTimeout time.Duration
	// WriteTimeout bounds writing replies to a slow reader. 30s when zero.
	WriteTimeout time.Duration
	// MaxConnsPerIP bounds the connections of one source address.
	// MaxConns/2 when zero; negative: no bound.
	MaxConnsPerIP int
	// HandshakeTimeout closes a connection that has not sent a whole first
	// request this long after connecting. 10s when zero; negative: none.
	HandshakeTimeout time.Duration
	// MaxConns bounds open connections. 1024 when zero.
	MaxConns int
	// MaxScanLimit caps the limit of a keys request. 10000 when zero.
	MaxScanLimit int
	// Password, when set, must be sent with an auth request before any
	// other request on a connection.
	Password string
	// BackupFiles are files beside the engine's (the RESP server's
	// functions file) that a backup carries with the checkpoint: each is
	// read as the backup begins, just before the checkpoint is frozen (its
	// writer replaces it atomically, so a read sees one whole version), and
	// sent in the trailer. A missing file is left out.
	BackupFiles []string
	Logger      *slog.Logger
	Metrics     *metrics.Metrics
}

func (o Options) withDefaults() Options {
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		} else if *v < 0 {
			*v = 0
		}
	}
	def(&o.IdleTimeout, DefaultIdleTimeout)
	def(&o.WriteTimeout, DefaultWriteTimeout)
	def(&o.HandshakeTimeout, DefaultHandshakeTimeout)
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = DefaultMaxLineBytes
	}
	if o.MaxConns == 0 {
		o.MaxConns = DefaultMaxConns
	} else if o.MaxConns < 0 {
		o.MaxConns = 0
	}
	if o.MaxConnsPerIP == 0 {
		o.MaxConnsPerIP = max(o.MaxConns/2, 1)
	} else if o.MaxConnsPerIP < 0 {
		o.MaxConnsPerIP = 0
	}
	if o.MaxScanLimit <= 0 {
		o.MaxScanLimit = DefaultMaxScanLimit
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Server serves the protocol over the connections of its listeners.
type Server struct {
	store backend.Store
	opts  Options
	conns *connserver.Server
}

// NewServer returns a server over store.
func NewServer(store backend.Store, opts Options) *Server {
	opts = opts.withDefaults()
	s := &Server{store: store, opts: opts}
	reject, _ := json.Marshal(Response{Error: fmt.Sprintf("too many connections (the limit is %d)", opts.MaxConns), Code: CodeTooManyConn})
	s.conns = connserver.New(connserver.Options{
		MaxConns:         opts.MaxConns,
		MaxConnsPerIP:    opts.MaxConnsPerIP,
		HandshakeTimeout: opts.HandshakeTimeout,
		IdleTimeout:      opts.IdleTimeout,
		WriteTimeout:     opts.WriteTimeout,
		Reject:           append(reject, '\n'),
		Transport:        metrics.TCP,
		Metrics:          opts.Metrics,
		Logger:           opts.Logger,
	}, s.serveConn)
	return s
}

// Serve accepts connections on ln until Shutdown, then returns
// connserver's ErrServerClosed (test with IsClosed).
func (s *Server) Serve(ln net.Listener) error { return s.conns.Serve(ln) }

// Shutdown stops accepting, answers the requests being served, closes every
// connection, and waits for that until ctx is done.
func (s *Server) Shutdown(ctx context.Context) error { return s.conns.Shutdown(ctx) }

// IsClosed reports whether err is what Serve returns after Shutdown.
func IsClosed(err error) bool { return errors.Is(err, connserver.ErrServerClosed) }

// errLineTooLong: the line was skipped up to its newline.
var errLineTooLong = errors.New("line too long")

func (s *Server) serveConn(c *connserver.Conn) {
	log := s.opts.Logger.With("transport", "tcp", "remote", c.RemoteAddr().String())
	r := bufio.NewReaderSize(c, 64<<10)
	w := bufio.NewWriterSize(c, 64<<10)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	var line []byte
	authed := s.opts.Password == ""
	for {
		if !c.AwaitRequest() {
			return
		}
		if cap(line) > 1<<20 {
			line = nil // one large request must not pin its memory for the connection's life
		}
		var err error
		line, err = readLine(r, line[:0], s.opts.MaxLineBytes)
		c.RequestRead()
		if errors.Is(err, errLineTooLong) {
			err = nil
			line = nil
			if werr := s.reply(c, w, enc, r, Response{Error: fmt.Sprintf("request line longer than %d bytes", s.opts.MaxLineBytes), Code: CodeLineTooLong}); werr != nil {
				return
			}
			continue
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !c.Draining() {
				log.Debug("connection closed", "err", err)
			}
			return
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		resp := s.handleLine(line, log, &authed)
		if resp.OK && resp.Stream != "" {
			// A backup: the reply line, the checkpoint's chunks, the trailer.
			err := s.streamBackup(c, w, enc, resp)
			if err != nil {
				log.Warn("backup stream failed", "err", err)
				return
			}
			continue
		}
		if err := s.reply(c, w, enc, r, resp); err != nil {
			log.Debug("write failed", "err", err)
			return
		}
		if c.Draining() {
			w.Flush()
			return
		}
	}
}

// reply queues resp and flushes when no further request is already buffered,
// so pipelined requests share a write.
func (s *Server) reply(c *connserver.Conn, w *bufio.Writer, enc *json.Encoder, r *bufio.Reader, resp Response) error {
	if err := enc.Encode(resp); err != nil {
		return err
	}
	if hasWholeLine(r) {
		return nil // the next request is here: answer it in the same write
	}
	c.ArmWrite()
	return w.Flush()
}

// hasWholeLine reports whether a complete request line is already buffered,
// so that replies are never left waiting while the server reads.
func hasWholeLine(r *bufio.Reader) bool {
	buf, _ := r.Peek(r.Buffered())
	return bytes.IndexByte(buf, '\n') >= 0
}

// readLine appends the next line (without its newline) to buf. A line longer
// than max is consumed up to its newline and reported as errLineTooLong, so
// the connection stays in step.
func readLine(r *bufio.Reader, buf []byte, max int) ([]byte, error) {
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > max+1 { // +1: the newline
				tooLong = true
				buf = buf[:0]
			} else {
				buf = append(buf, chunk...)
			}
		}
		switch {
		case err == nil:
			if tooLong {
				return buf, errLineTooLong
			}
			return buf[:len(buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(buf) > 0 && !tooLong:
			return buf, nil // a last request without its newline
		default:
			return buf, err
		}
	}
}

// handleLine answers one request line; a panic becomes an internal error.
func (s *Server) handleLine(line []byte, log *slog.Logger, authed *bool) (resp Response) {
	start := time.Now()
	op := metrics.OpOther
	defer func() {
		if p := recover(); p != nil {
			log.Error("request panicked", "panic", fmt.Sprint(p))
			resp = Response{Error: "internal error", Code: backend.CodeInternal}
		}
		s.opts.Metrics.Request(metrics.TCP, op, start, !resp.OK)
	}()
	// encoding/json would turn invalid UTF-8 into U+FFFD and store that.
	if err := checkUTF8(line); err != nil {
		return Response{Error: err.Error() + ": send binary keys and values base64-encoded in key_b64 / value_b64", Code: CodeInvalidUTF8}
	}
	var req Request
	if err := json.Unmarshal(line, &req); err != nil {
		return Response{Error: "bad JSON: " + err.Error(), Code: CodeBadJSON}
	}
	switch {
	case req.Op == OpAuth:
		resp = s.auth(&req, authed)
	case !*authed:
		resp = Response{Error: `authentication required: send {"op":"auth","password":"..."} first`, Code: CodeUnauthorized}
	default:
		op, resp = s.handle(&req)
	}
	resp.ID = req.ID
	return resp
}

func (s *Server) handle(req *Request) (metrics.Op, Response) {
	switch req.Op {
	case OpSet:
		return metrics.OpSet, s.set(req)
	case OpGet:
		return metrics.OpGet, s.get(req)
	case OpDelete, "del":
		return metrics.OpDelete, s.delete(req)
	case OpKeys, "scan":
		return metrics.OpScan, s.keys(req)
	case OpPing:
		pong := "pong"
		return metrics.OpPing, Response{OK: true, Value: &pong}
	case OpStats:
		st := s.store.Stats()
		return metrics.OpStats, Response{OK: true, Stats: &st}
	case OpBackup:
		return metrics.OpOther, Response{OK: true, Stream: "chunked"}
	case "":
		return metrics.OpOther, Response{Error: `missing "op"`, Code: CodeBadRequest}
	default:
		return metrics.OpOther, Response{Error: fmt.Sprintf("unknown op %q (want set, get, delete, ping, keys, stats, auth or backup)", req.Op), Code: CodeUnknownOp}
	}
}

func (s *Server) auth(req *Request, authed *bool) Response {
	if s.opts.Password == "" {
		return Response{Error: "auth sent, but the server has no password", Code: CodeBadRequest}
	}
	if subtle.ConstantTimeCompare([]byte(req.Password), []byte(s.opts.Password)) != 1 {
		*authed = false
		return Response{Error: "wrong password", Code: CodeUnauthorized}
	}
	*authed = true
	return Response{OK: true}
}

func engineError(err error) Response {
	return Response{Error: err.Error(), Code: backend.Code(err)}
}

func (s *Server) set(req *Request) Response {
	value, ok := req.value()
	if !ok {
		return Response{Error: `set needs "value" or "value_b64"`, Code: CodeBadRequest}
	}
	if err := s.store.Set(pick(req.Key, req.KeyB64), value); err != nil {
		return engineError(err)
	}
	return Response{OK: true}
}

func (s *Server) get(req *Request) Response {
	v, err := s.store.Get(pick(req.Key, req.KeyB64))
	if errors.Is(err, kvstore.ErrNotFound) {
		return Response{OK: true, Found: new(false)}
	}
	if err != nil {
		return engineError(err)
	}
	resp := Response{OK: true, Found: new(true)}
	resp.setValue(v)
	return resp
}

// delete removes the key and reports whether this request removed it: of
// concurrent deletes of one key exactly one answers found.
func (s *Server) delete(req *Request) Response {
	key := pick(req.Key, req.KeyB64)
	var found bool
	err := s.store.Update(func(tx *kvstore.Tx) error {
		var err error
		found, err = tx.Delete(key)
		return err
	})
	if err != nil {
		return engineError(err)
	}
	return Response{OK: true, Found: &found}
}

func (s *Server) keys(req *Request) Response {
	if req.Limit < 0 {
		return Response{Error: fmt.Sprintf("negative limit %d", req.Limit), Code: CodeBadRequest}
	}
	limit := min(req.Limit, s.opts.MaxScanLimit)
	if limit == 0 {
		limit = min(kvstore.DefaultScanLimit, s.opts.MaxScanLimit)
	}
	page, err := s.store.Scan(kvstore.ScanOptions{
		Prefix: pick(req.Prefix, req.PrefixB64),
		After:  pick(req.After, req.AfterB64),
		Limit:  limit,
	})
	if err != nil {
		return engineError(err)
	}
	resp := Response{OK: true}
	resp.setKeys(page.Entries, page.Next)
	if req.Values {
		resp.Entries = make([]EntryJSON, len(page.Entries))
		for i, e := range page.Entries {
			resp.Entries[i] = entryJSON(e)
		}
	}
	return resp
}

// checkUTF8 reports a request line that is not valid UTF-8, or whose
// strings hold a \u escape of a lone surrogate (not a character either).
func checkUTF8(line []byte) error {
	if !utf8.Valid(line) {
		for i := 0; i < len(line); {
			r, n := utf8.DecodeRune(line[i:])
			if r == utf8.RuneError && n <= 1 {
				return fmt.Errorf("invalid UTF-8 at byte %d", i)
			}
			i += n
		}
	}
	for i := 0; i+1 < len(line); i++ {
		if line[i] != '\\' {
			continue
		}
		if line[i+1] != 'u' {
			i++ // an escaped character: skip it, it may be a backslash
			continue
		}
		r, ok := hex4(line, i+2)
		switch {
		case !ok:
			i++
			continue // malformed: the JSON decoder reports it
		case 0xD800 <= r && r < 0xDC00:
			if lo, ok := hex4(line, i+8); ok && i+7 < len(line) && line[i+6] == '\\' && line[i+7] == 'u' && 0xDC00 <= lo && lo < 0xE000 {
				i += 11
				continue
			}
			return fmt.Errorf("lone surrogate \\u%04x at byte %d is not valid UTF-8", r, i)
		case 0xDC00 <= r && r < 0xE000:
			return fmt.Errorf("lone surrogate \\u%04x at byte %d is not valid UTF-8", r, i)
		}
		i += 5
	}
	return nil
}

// hex4 parses the four hex digits at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// streamBackup writes the reply line, then a checkpoint of the store in
// chunks as the engine produces it (nothing is staged on the server's disk;
// writers keep going), then the trailer naming the checkpoint's file.
func (s *Server) streamBackup(c *connserver.Conn, w *bufio.Writer, enc *json.Encoder, resp Response) error {
	if err := enc.Encode(resp); err != nil {
		return err
	}
	extra, xerr := readBackupFiles(s.opts.BackupFiles)
	cw := &chunkWriter{dw: deadlineWriter{c: c, w: w}}
	info, err := s.store.StreamCheckpoint(context.Background(), cw)
	if err == nil {
		err = xerr
	}
	if cw.err != nil {
		return cw.err // the client is gone: nothing more can be said
	}
	if _, werr := w.WriteString("0\n"); werr != nil {
		return werr
	}
	trailer := Response{OK: true, Files: append([]BackupFile{{Name: info.Path, Size: cw.total}}, extra...)}
	if err != nil {
		trailer = engineError(err)
	}
	if err := enc.Encode(trailer); err != nil {
		return err
	}
	c.ArmWrite()
	return w.Flush()
}

// readBackupFiles reads the files a backup carries beside the checkpoint.
func readBackupFiles(paths []string) ([]BackupFile, error) {
	var out []BackupFile
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("backup: read %s: %w", p, err)
		}
		out = append(out, BackupFile{Name: filepath.Base(p), Size: int64(len(b)), Data: b})
	}
	return out, nil
}

// chunkWriter frames what it is given as "<n>\n" and n bytes.
type chunkWriter struct {
	dw    deadlineWriter
	total int64
	err   error
}

func (cw *chunkWriter) Write(p []byte) (int, error) {
	if cw.err != nil {
		return 0, cw.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if _, err := cw.dw.w.WriteString(strconv.Itoa(len(p)) + "\n"); err != nil {
		cw.err = err
		return 0, err
	}
	n, err := cw.dw.Write(p)
	cw.total += int64(n)
	if err != nil {
		cw.err = err
	}
	return n, err
}

// deadlineWriter arms the write deadline before each write.
type deadlineWriter struct {
	c *connserver.Conn
	w *bufio.Writer
}

func (d deadlineWriter) Write(p []byte) (int, error) {
	d.c.ArmWrite()
	return d.w.Write(p)
}
