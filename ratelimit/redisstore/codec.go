package redisstore

import (
	"strconv"
	"strings"
)

// The state of one identity is one Redis string (see lua/codec.lua):
//
//	<hits>|<id><fields>|<id><fields>...
//
// A limit's fields are comma separated, trailing empty ones left out; the
// fourth is the end of a penalty block, in microseconds minus stateEpoch.
// A segment ends with "~" and the minute (base 36) after which it is stale.

// stateEpoch is subtracted from the times stored (µs; 2025-06-15 UTC).
const stateEpoch = 1750000000000000

// idAlphabet spells limit ids: 64 characters, none of them a separator.
const idAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_"

// limitIDLen is the length of a limit id in the state: 30 bits.
const limitIDLen = 5

// encodeLimitID spells a limit id (algo.LimitID) in limitIDLen characters.
func encodeLimitID(id uint32) string {
	var b [limitIDLen]byte
	for i := range b {
		b[i] = idAlphabet[id&63]
		id >>= 6
	}
	return string(b[:])
}

// decodedState is what info and top read from a stored value.
type decodedState struct {
	hits int64
	// blockedUntil is the latest end of a penalty block, µs; 0 for none.
	blockedUntil float64
}

// decodeState parses a stored value; ok is false when it is not one.
func decodeState(raw string) (st decodedState, ok bool) {
	head, rest, _ := strings.Cut(raw, "|")
	hits, err := strconv.ParseFloat(head, 64)
	if err != nil {
		return st, false
	}
	st.hits = int64(hits)
	for rest != "" {
		var seg string
		seg, rest, _ = strings.Cut(rest, "|")
		if len(seg) < limitIDLen {
			return st, false
		}
		body, _, _ := strings.Cut(seg[limitIDLen:], "~") // "~<expiry minute>" ends a segment
		fields := strings.Split(body, ",")
		if len(fields) < 4 || fields[3] == "" {
			continue
		}
		x, err := strconv.ParseFloat(fields[3], 64)
		if err != nil {
			return st, false
		}
		st.blockedUntil = max(st.blockedUntil, x+stateEpoch)
	}
	return st, true
}
