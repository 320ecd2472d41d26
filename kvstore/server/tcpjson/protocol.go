// Package tcpjson serves the engine over TCP with newline-delimited JSON, and
// is a Go client for that protocol.
//
// One request is one line, one JSON object; replies come back one line each,
// in request order, so a client may pipeline. The wire format is compatible
// with go-durable-kv's (op, key, value / ok, found, value, error) and adds
// binary safety (key_b64, value_b64), key listing, stats, request ids, limits
// and timeouts:
//
//	{"op":"set","key":"user:1","value":"alice"}       {"ok":true}
//	{"op":"get","key":"user:1"}                        {"ok":true,"found":true,"value":"alice"}
//	{"op":"get","key":"nope"}                          {"ok":true,"found":false}
//	{"op":"delete","key":"user:1"}                     {"ok":true,"found":true}
//	{"op":"keys","prefix":"user:","limit":2}           {"ok":true,"keys":["user:1","user:2"],"next":"user:2"}
//	{"op":"ping"}                                      {"ok":true,"value":"pong"}
//	{"op":"stats"}                                     {"ok":true,"stats":{...}}
//	{"op":"get"}                                       {"ok":false,"error":"...","code":"empty_key"}
//	{"op":"auth","password":"..."}                     {"ok":true}  (when the server has a password)
//	{"op":"backup"}                                    {"ok":true,"stream":"chunked"} chunks {"ok":true,"files":[...]}
//
// A value that is not valid UTF-8 travels base64-encoded as value_b64 (in
// both directions); keys likewise as key_b64, and listed keys as keys_b64.
// A request whose strings are not valid UTF-8 (raw bytes, or a \u escape
// of a lone surrogate) is refused with code invalid_utf8, never stored
// with U+FFFD in place of the bytes sent.
package tcpjson

import (
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/devkit-go/devkit/kvstore"
)

// Ops of the protocol.
const (
	OpSet    = "set"
	OpGet    = "get"
	OpDelete = "delete"
	OpPing   = "ping"
	OpKeys   = "keys"
	OpStats  = "stats"
	// OpAuth authenticates the connection when the server has a password.
	OpAuth = "auth"
	// OpBackup streams a checkpoint of the store: the reply line, then the
	// checkpoint in chunks ("<n>\n" and n bytes, "0\n" at the end), then a
	// trailer line with its file (or the error that cut it short).
	OpBackup = "backup"
)

// Error codes of the protocol, beyond the engine's (see package backend).
const (
	CodeBadJSON     = "bad_json"
	CodeUnknownOp   = "unknown_op"
	CodeLineTooLong = "line_too_long"
	CodeTooManyConn = "too_many_connections"
	CodeBadRequest  = "bad_request"
	// CodeInvalidUTF8: a string in the request is not valid UTF-8; binary
	// keys and values travel base64-encoded (key_b64, value_b64).
	CodeInvalidUTF8 = "invalid_utf8"
	// CodeUnauthorized: the server has a password and the connection has not
	// sent it with an auth request (or sent a wrong one).
	CodeUnauthorized = "unauthorized"
)

// Request is one line a client sends.
type Request struct {
	// ID, when present, is echoed in the reply.
	ID json.RawMessage `json:"id,omitempty"`
	// Op is set, get, delete (or del), ping, keys (or scan) or stats.
	Op string `json:"op"`
	// Key, or KeyB64 for a key that is not valid UTF-8.
	Key    string `json:"key,omitempty"`
	KeyB64 []byte `json:"key_b64,omitempty"`
	// Value, or ValueB64 for a value that is not valid UTF-8 (set only).
	Value    *string `json:"value,omitempty"`
	ValueB64 *[]byte `json:"value_b64,omitempty"`
	// Prefix, After and Limit select a page of keys (keys only).
	Prefix    string `json:"prefix,omitempty"`
	PrefixB64 []byte `json:"prefix_b64,omitempty"`
	After     string `json:"after,omitempty"`
	AfterB64  []byte `json:"after_b64,omitempty"`
	Limit     int    `json:"limit,omitempty"`
	// Values asks keys for the values and expiries too (entries).
	Values bool `json:"values,omitempty"`
	// Password authenticates the connection (auth only).
	Password string `json:"password,omitempty"`
}

// Response is one line the server sends back.
type Response struct {
	ID json.RawMessage `json:"id,omitempty"`
	OK bool            `json:"ok"`
	// Found answers get and delete: whether the key existed.
	Found *bool `json:"found,omitempty"`
	// Value (or ValueB64) is the value of a get, or "pong".
	Value    *string `json:"value,omitempty"`
	ValueB64 []byte  `json:"value_b64,omitempty"`
	// Keys (or KeysB64 when one is not valid UTF-8) is a page of keys;
	// Next (or NextB64) the cursor to pass as after for the next page.
	Keys    []string       `json:"keys,omitzero"`
	KeysB64 [][]byte       `json:"keys_b64,omitzero"`
	Next    *string        `json:"next,omitempty"`
	NextB64 []byte         `json:"next_b64,omitempty"`
	Stats   *kvstore.Stats `json:"stats,omitempty"`
	// Entries answer keys with values: each key with its value and expiry.
	Entries []EntryJSON `json:"entries,omitzero"`
	// Stream is "chunked" on the reply that starts a backup stream.
	Stream string `json:"stream,omitempty"`
	// Files are the files of a backup (its trailer).
	Files []BackupFile `json:"files,omitempty"`
	// Error and Code describe a failure (OK is false).
	Error string `json:"error,omitempty"`
	Code  string `json:"code,omitempty"`
}

// EntryJSON is a key, its value and its expiry (unix milliseconds, 0 for
// none); key and value as text when valid UTF-8, else base64.
type EntryJSON struct {
	Key        string `json:"key,omitempty"`
	KeyB64     []byte `json:"key_b64,omitempty"`
	Value      string `json:"value,omitempty"`
	ValueB64   []byte `json:"value_b64,omitempty"`
	ExpireAtMs int64  `json:"expire_at_ms,omitempty"`
	// Type is the kind of a collection ("hash", "list", "set", "zset");
	// absent for a string. A collection's value_b64 is its packed encoding
	// (kvstore.Unpack reads it).
	Type string `json:"type,omitempty"`
}

func entryJSON(e kvstore.Entry) EntryJSON {
	var j EntryJSON
	if isText(e.Key) {
		j.Key = string(e.Key)
	} else {
		j.KeyB64 = e.Key
	}
	if e.Kind != kvstore.KindString {
		j.Type = e.Kind.String()
	}
	if e.Kind == kvstore.KindString && isText(e.Value) {
		j.Value = string(e.Value)
	} else {
		j.ValueB64 = e.Value
		if j.ValueB64 == nil {
			j.ValueB64 = []byte{}
		}
	}
	if !e.ExpiresAt.IsZero() {
		j.ExpireAtMs = max(e.ExpiresAt.UnixMilli(), 1)
	}
	return j
}

// Entry returns the engine entry the JSON carries.
func (j EntryJSON) Entry() kvstore.Entry {
	e := kvstore.Entry{Key: pick(j.Key, j.KeyB64), Value: pick(j.Value, j.ValueB64)}
	if k, ok := kvstore.ParseKind(j.Type); ok {
		e.Kind = k
	}
	if j.ExpireAtMs > 0 {
		e.ExpiresAt = time.UnixMilli(j.ExpireAtMs)
	}
	return e
}

// BackupFile is one file of a streamed checkpoint. The checkpoint's is
// streamed before the trailer; the others (Options.BackupFiles) come whole
// in the trailer's Data.
type BackupFile struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
	Data []byte `json:"data,omitempty"`
}

// pick returns the bytes of a field sent as text or base64.
func pick(text string, b64 []byte) []byte {
	if b64 != nil {
		return b64
	}
	return []byte(text)
}

// value returns the value of a set request and whether one was given.
func (r *Request) value() ([]byte, bool) {
	switch {
	case r.ValueB64 != nil:
		return *r.ValueB64, true
	case r.Value != nil:
		return []byte(*r.Value), true
	}
	return nil, false
}

// setValue puts v in the reply as text when it is valid UTF-8, else base64.
func (r *Response) setValue(v []byte) {
	if utf8.Valid(v) {
		s := string(v)
		r.Value = &s
		return
	}
	r.ValueB64 = v
}

// value returns the value carried by the reply.
func (r *Response) value() []byte {
	if r.ValueB64 != nil {
		return r.ValueB64
	}
	if r.Value != nil {
		return []byte(*r.Value)
	}
	return nil
}

// setKeys puts a page of keys in the reply, all as text or all as base64.
func (r *Response) setKeys(entries []kvstore.Entry, next []byte) {
	text := utf8.Valid(next)
	for _, e := range entries {
		if !utf8.Valid(e.Key) {
			text = false
			break
		}
	}
	if text {
		r.Keys = make([]string, len(entries))
		for i, e := range entries {
			r.Keys[i] = string(e.Key)
		}
		if next != nil {
			s := string(next)
			r.Next = &s
		}
		return
	}
	r.KeysB64 = make([][]byte, len(entries))
	for i, e := range entries {
		r.KeysB64[i] = e.Key
	}
	r.NextB64 = next
}

// keys returns the page of keys carried by the reply.
func (r *Response) keys() (keys [][]byte, next []byte) {
	if r.KeysB64 != nil || r.NextB64 != nil {
		return r.KeysB64, r.NextB64
	}
	keys = make([][]byte, len(r.Keys))
	for i, k := range r.Keys {
		keys[i] = []byte(k)
	}
	if r.Next != nil {
		next = []byte(*r.Next)
	}
	return keys, next
}

// isText reports whether b can travel as a JSON string unchanged.
func isText(b []byte) bool { return utf8.Valid(b) }
