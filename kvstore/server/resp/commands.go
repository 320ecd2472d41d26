package resp

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/backend"
	"github.com/devkit-go/devkit/kvstore/server/metrics"
)

// maxCommandName bounds the command names we look up; longer ones are unknown.
const maxCommandName = 16

// execute runs one command and writes its reply; a panic becomes an error
// reply and the connection carries on.
func (s *Server) execute(cl *client, args [][]byte) {
	start := time.Now()
	op := metrics.OpOther
	failed := false
	defer func() {
		if p := recover(); p != nil {
			cl.log.Error("command panicked", "command", string(args[0]), "panic", fmt.Sprint(p))
			cl.out.error("ERR internal error")
			failed = true
		}
		s.commands.Add(1)
		s.opts.Metrics.Request(metrics.RESP, op, start, failed)
	}()
	var name [maxCommandName]byte
	n := copy(name[:], args[0])
	for i := range n {
		if c := name[i]; 'a' <= c && c <= 'z' {
			name[i] = c - ('a' - 'A')
		}
	}
	cmd := string(name[:n])
	if len(args[0]) > maxCommandName {
		cmd = ""
	}
	op, failed = s.dispatch(cl, cmd, args)
}

// dispatch runs cmd; it reports the op counted and whether it failed.
func (s *Server) dispatch(cl *client, cmd string, args [][]byte) (metrics.Op, bool) {
	w := &cl.out
	switch cmd {
	case "GET":
		if !arity(w, args, 2, 2) {
			return metrics.OpGet, true
		}
		v, err := s.store.Get(args[1])
		switch {
		case errors.Is(err, kvstore.ErrNotFound):
			w.null()
		case err != nil:
			return metrics.OpGet, engineError(w, err)
		default:
			w.bulk(v)
		}
		return metrics.OpGet, false
	case "SET":
		if !arity(w, args, 3, -1) {
			return metrics.OpSet, true
		}
		if len(args) > 3 {
			w.error(fmt.Sprintf("ERR SET option '%s' is not supported: devkit kv takes only SET key value (no expiry, NX/XX, GET or KEEPTTL)", strings.ToUpper(printable(args[3]))))
			return metrics.OpSet, true
		}
		if err := s.store.Set(args[1], args[2]); err != nil {
			return metrics.OpSet, engineError(w, err)
		}
		w.simple("OK")
		return metrics.OpSet, false
	case "DEL", "UNLINK":
		if !arity(w, args, 2, -1) {
			return metrics.OpDelete, true
		}
		var deleted int64
		for _, key := range args[1:] {
			found, err := s.store.Has(key)
			if err == nil && found {
				err = s.store.Delete(key)
			}
			if err != nil {
				return metrics.OpDelete, engineError(w, err)
			}
			if found {
				deleted++
			}
		}
		w.integer(deleted)
		return metrics.OpDelete, false
	case "EXISTS":
		if !arity(w, args, 2, -1) {
			return metrics.OpGet, true
		}
		var n int64
		for _, key := range args[1:] {
			found, err := s.store.Has(key)
			if err != nil {
				return metrics.OpGet, engineError(w, err)
			}
			if found {
				n++
			}
		}
		w.integer(n)
		return metrics.OpGet, false
	case "MGET":
		if !arity(w, args, 2, -1) {
			return metrics.OpGet, true
		}
		w.array(len(args) - 1)
		for _, key := range args[1:] {
			// Like Redis, a key that cannot hold a value reads as nil.
			if v, err := s.store.Get(key); err == nil {
				w.bulk(v)
			} else {
				w.null()
			}
		}
		return metrics.OpGet, false
	case "MSET":
		if len(args) < 3 || len(args)%2 == 0 {
			w.error("ERR wrong number of arguments for 'mset' command")
			return metrics.OpSet, true
		}
		if err := s.mset(cl, args); err != nil {
			return metrics.OpSet, engineError(w, err)
		}
		w.simple("OK")
		return metrics.OpSet, false
	case "DBSIZE":
		if !arity(w, args, 1, 1) {
			return metrics.OpStats, true
		}
		w.integer(int64(s.store.Len()))
		return metrics.OpStats, false
	case "SCAN":
		return metrics.OpScan, s.scan(w, args)
	case "PING":
		if !arity(w, args, 1, 2) {
			return metrics.OpPing, true
		}
		if len(args) == 2 {
			w.bulk(args[1])
		} else {
			w.simple("PONG")
		}
		return metrics.OpPing, false
	case "ECHO":
		if !arity(w, args, 2, 2) {
			return metrics.OpPing, true
		}
		w.bulk(args[1])
		return metrics.OpPing, false
	case "INFO":
		w.bulkString(s.info(args[1:]))
		return metrics.OpStats, false
	case "SELECT":
		if !arity(w, args, 2, 2) {
			return metrics.OpOther, true
		}
		if n, ok := parseInt(args[1]); !ok {
			w.error("ERR value is not an integer or out of range")
			return metrics.OpOther, true
		} else if n != 0 {
			w.error("ERR DB index is out of range")
			return metrics.OpOther, true
		}
		w.simple("OK")
		return metrics.OpOther, false
	case "QUIT":
		w.simple("OK")
		cl.quit = true
		return metrics.OpOther, false
	case "AUTH":
		w.error("ERR Client sent AUTH, but no password is set")
		return metrics.OpOther, true
	case "CLIENT":
		return metrics.OpOther, s.clientCommand(cl, args)
	case "COMMAND":
		return metrics.OpOther, s.commandCommand(w, args)
	case "CONFIG":
		return metrics.OpOther, s.configCommand(w, args)
	}
	// HELLO falls through here on purpose: Redis before 6 did not know it,
	// and clients (go-redis v9, redis-cli) then carry on with RESP2.
	unknownCommand(w, args)
	return metrics.OpOther, true
}

// arity checks the argument count (the command included); max -1 is unbounded.
func arity(w *replyWriter, args [][]byte, min, max int) bool {
	if len(args) < min || (max >= 0 && len(args) > max) {
		w.error(fmt.Sprintf("ERR wrong number of arguments for '%s' command", strings.ToLower(printable(args[0]))))
		return false
	}
	return true
}

func unknownCommand(w *replyWriter, args [][]byte) {
	var b strings.Builder
	fmt.Fprintf(&b, "ERR unknown command '%s', with args beginning with: ", printable(args[0]))
	for _, a := range args[1:min(len(args), 4)] {
		fmt.Fprintf(&b, "'%s' ", printable(a))
	}
	w.error(b.String())
}

// printable cuts an argument for an error message and hides bytes that
// would not read well.
func printable(b []byte) string {
	if len(b) > 128 {
		b = b[:128]
	}
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || r == '\uFFFD' {
			return '?'
		}
		return r
	}, string(b))
}

// engineError writes an engine error in Redis's style; it returns true.
func engineError(w *replyWriter, err error) bool {
	switch backend.Code(err) {
	case backend.CodeReadOnly:
		// Redis answers writes it cannot persist with MISCONF.
		w.error("MISCONF " + err.Error())
	default:
		w.error("ERR " + err.Error())
	}
	return true
}

func (s *Server) clientCommand(cl *client, args [][]byte) bool {
	w := &cl.out
	if len(args) < 2 {
		w.error("ERR wrong number of arguments for 'client' command")
		return true
	}
	switch strings.ToUpper(string(args[1])) {
	case "SETNAME":
		if len(args) != 3 {
			w.error("ERR wrong number of arguments for 'client|setname' command")
			return true
		}
		if bytes.ContainsAny(args[2], " \n\r") {
			w.error("ERR Client names cannot contain spaces, newlines or special characters.")
			return true
		}
		cl.name = string(args[2])
		w.simple("OK")
	case "GETNAME":
		if cl.name == "" {
			w.null()
		} else {
			w.bulkString(cl.name)
		}
	case "SETINFO":
		if len(args) != 4 {
			w.error("ERR wrong number of arguments for 'client|setinfo' command")
			return true
		}
		w.simple("OK")
	case "ID":
		w.integer(cl.id)
	default:
		w.error(fmt.Sprintf("ERR unknown subcommand '%s'. Try CLIENT SETNAME, GETNAME, SETINFO or ID.", printable(args[1])))
		return true
	}
	return false
}

// commandNames are the commands COMMAND COUNT and COMMAND LIST report.
var commandNames = []string{"auth", "client", "command", "config", "dbsize", "del", "echo", "exists",
	"get", "info", "mget", "mset", "ping", "quit", "scan", "select", "set", "unlink"}

func (s *Server) commandCommand(w *replyWriter, args [][]byte) bool {
	sub := ""
	if len(args) > 1 {
		sub = strings.ToUpper(string(args[1]))
	}
	switch sub {
	case "COUNT":
		w.integer(int64(len(commandNames)))
	case "LIST":
		w.array(len(commandNames))
		for _, name := range commandNames {
			w.bulkString(name)
		}
	case "", "DOCS", "INFO":
		// No command table: clients then use their built-in knowledge.
		w.array(0)
	default:
		w.error(fmt.Sprintf("ERR unknown subcommand '%s'. Try COMMAND COUNT, LIST, DOCS or INFO.", printable(args[1])))
		return true
	}
	return false
}

func (s *Server) configCommand(w *replyWriter, args [][]byte) bool {
	if len(args) < 2 {
		w.error("ERR wrong number of arguments for 'config' command")
		return true
	}
	switch strings.ToUpper(string(args[1])) {
	case "GET":
		if len(args) < 3 {
			w.error("ERR wrong number of arguments for 'config|get' command")
			return true
		}
		params := s.configParams()
		var out []string
		for _, pat := range args[2:] {
			p := strings.ToLower(string(pat))
			for _, kv := range params {
				if p == "*" || p == kv[0] {
					out = append(out, kv[0], kv[1])
				}
			}
		}
		w.array(len(out))
		for _, v := range out {
			w.bulkString(v)
		}
		return false
	case "RESETSTAT":
		w.simple("OK")
		return false
	default:
		w.error(fmt.Sprintf("ERR CONFIG %s is not supported: devkit kv is configured with flags of devkit kv serve", printable(args[1])))
		return true
	}
}

// configParams are the read-only settings CONFIG GET reports, in Redis's names.
func (s *Server) configParams() [][2]string {
	fsync := map[string]string{"always": "always", "periodic": "everysec", "none": "no"}[s.store.Stats().SyncPolicy]
	return [][2]string{
		{"appendonly", "yes"},
		{"appendfsync", fsync},
		{"save", ""},
		{"databases", "1"},
		{"maxclients", strconv.Itoa(s.opts.MaxConns)},
		{"timeout", strconv.Itoa(int(s.opts.IdleTimeout / time.Second))},
		{"proto-max-bulk-len", strconv.Itoa(s.opts.MaxBulkBytes)},
	}
}
