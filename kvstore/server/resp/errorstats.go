package resp

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// errorStats are INFO's total_error_replies and errorstats section: every
// error reply a client was sent, counted once by its code (the message's
// first word, as Redis's afterErrorReply takes it). An error a script's
// redis.call got, counted there, is not counted again when the script
// raises or returns it (Redis's ignore_error_stats_update), so a failed
// EVAL of a failed command counts one error, as in Redis.
//
// Invariant: at most maxErrorCodes codes are kept (a script's
// redis.error_reply can make any code, and each would be kept for the
// life of the server); an error with a code not kept by then still counts
// in the total.
type errorStats struct {
	total atomic.Int64
	mu    sync.Mutex
	codes map[string]int64
}

// maxErrorCodes bounds the codes errorstats keeps (Redis 7.2's bound).
const maxErrorCodes = 128

// errorCode is the code of an error reply's message (without its '-'):
// the word before the first space within Redis's 32 bytes of the line,
// else ERR.
func errorCode(msg string) string {
	head := msg[:min(len(msg), 31)]
	if i := strings.IndexByte(head, ' '); i > 0 {
		return head[:i]
	}
	return "ERR"
}

func (e *errorStats) record(msg string) {
	e.total.Add(1)
	code := errorCode(msg)
	e.mu.Lock()
	if n, ok := e.codes[code]; ok {
		e.codes[code] = n + 1
	} else if len(e.codes) < maxErrorCodes {
		if e.codes == nil {
			e.codes = map[string]int64{}
		}
		e.codes[strings.Clone(code)] = 1
	}
	e.mu.Unlock()
}

// reset is CONFIG RESETSTAT's part.
func (e *errorStats) reset() {
	e.mu.Lock()
	e.total.Store(0)
	e.codes = nil
	e.mu.Unlock()
}

// infoSafe makes a name safe in an INFO line, as Redis's getSafeInfoString.
var infoSafe = strings.NewReplacer(":", "_", "\r", " ", "\n", " ")

// section writes INFO's errorstats lines, by code in byte order (Redis's
// rax order), with CR and LF and ':' of a code made safe as Redis does.
func (e *errorStats) section(b *strings.Builder) {
	e.mu.Lock()
	codes := make([]string, 0, len(e.codes))
	for code := range e.codes {
		codes = append(codes, code)
	}
	slices.Sort(codes)
	for _, code := range codes {
		fmt.Fprintf(b, "errorstat_%s:count=%d\r\n", infoSafe.Replace(code), e.codes[code])
	}
	e.mu.Unlock()
}
