package resp

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// ttlKind says what a write does with the key's expiry.
type ttlKind int

const (
	ttlNone ttlKind = iota // clear it (a plain SET)
	ttlKeep                // keep it (KEEPTTL)
	ttlAt                  // expire at a time
)

type ttlOption struct {
	kind ttlKind
	at   time.Time
}

// parseExpiry parses the argument of EX, PX, EXAT or PXAT into an absolute
// time; cmd names the command in the error.
func parseExpiry(opt string, arg []byte, cmd string) (ttlOption, error) {
	n, ok := parseStrictInt(arg)
	if !ok {
		return ttlOption{}, errNotInteger
	}
	bad := cmdError(fmt.Sprintf("ERR invalid expire time in '%s' command", cmd))
	if n <= 0 {
		return ttlOption{}, bad
	}
	var at time.Time
	switch strings.ToUpper(opt) {
	case "EX":
		if n > math.MaxInt64/int64(time.Second)-time.Now().Unix() {
			return ttlOption{}, bad
		}
		at = time.Now().Add(time.Duration(n) * time.Second)
	case "PX":
		if n > math.MaxInt64/int64(time.Millisecond)-time.Now().UnixMilli() {
			return ttlOption{}, bad
		}
		at = time.Now().Add(time.Duration(n) * time.Millisecond)
	case "EXAT":
		if n > math.MaxInt64/int64(time.Second) {
			return ttlOption{}, bad
		}
		at = time.Unix(n, 0)
	case "PXAT":
		at = time.UnixMilli(n)
	}
	return ttlOption{kind: ttlAt, at: at}, nil
}

// set writes value under key with the option's effect on the expiry.
func (o ttlOption) set(tx txn, key, value []byte) error {
	switch o.kind {
	case ttlKeep:
		return tx.SetKeepTTL(key, value)
	case ttlAt:
		return cmdError("ERR expiries are not supported yet by this server")
	}
	return tx.Set(key, value)
}
