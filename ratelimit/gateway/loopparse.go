package gateway

// quickParse reads the head of the request a flood is made of, without
// http.ReadRequest's per-line allocations. It is no parser of its own
// rules: it accepts only heads whose every byte it understands, and for
// those it builds the *http.Request http.ReadRequest builds (the same
// fields, header map and values; FuzzQuickParse checks it against
// ReadRequest). Anything else, nil: the caller parses with ReadRequest.
//
// Accepted: "METHOD SP target SP HTTP/1.1|HTTP/1.0 CRLF", a method of
// token bytes; an origin-form target ("/" first, not "//") of bytes that
// need no escaping in a path (unreserved and "$&+,/:;=@"), with an optional
// query of visible ASCII but "#"; then fields "Name: value CRLF" with a
// token name, the colon right after it, and a value of visible ASCII,
// spaces and tabs (trimmed as textproto trims it); then CRLF. Refused
// (left to ReadRequest): any Connection, Content-Length, Transfer-Encoding,
// Pragma or Trailer field, and a second Host field, whose handling by
// ReadRequest goes beyond copying the field.

import (
	"bytes"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// commonFields are the canonical names of fields floods and clients send,
// by their spelling on the wire (canonical or lower case): no allocation
// for their names. Read only.
var commonFields = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{"Host", "User-Agent", "Accept", "Accept-Encoding", "Accept-Language", "Cookie",
		"Authorization", "Referer", "Origin", "Cache-Control", "X-Forwarded-For", "X-Forwarded-Proto", "X-Real-Ip",
		"Forwarded", "X-Request-Id", "X-Api-Key", "Sec-Fetch-Mode", "Sec-Fetch-Site", "Sec-Fetch-Dest", "Priority",
		"Upgrade-Insecure-Requests", "Dnt", "If-None-Match", "If-Modified-Since", "Content-Type"} {
		m[k] = k
		m[strings.ToLower(k)] = k
	}
	return m
}()

// knownMethods spell the usual methods without an allocation. Read only.
var knownMethods = map[string]string{"GET": "GET", "HEAD": "HEAD", "POST": "POST", "PUT": "PUT",
	"DELETE": "DELETE", "PATCH": "PATCH", "OPTIONS": "OPTIONS"}

// pathBytes and queryBytes are the bytes quickParse takes in a target's
// path and query. Read only.
var pathBytes, queryBytes = func() (p, q [256]bool) {
	for c := 0; c < 256; c++ {
		b := byte(c)
		switch {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
			p[c] = true
		default:
			p[c] = strings.IndexByte("-._~$&+,/:;=@", b) >= 0
		}
		q[c] = b > ' ' && b < 0x7f && b != '#'
	}
	return p, q
}()

// quickParseInto parses head (a whole head, the blank line included, that
// headScan passed), or returns nil. It parses into box, which it reuses
// (its request, URL, values and header map are overwritten), or into a new
// one when box is nil: the request returned is box's, and box is the
// caller's to reuse only once nothing holds the request any more.
func quickParseInto(head []byte, box *parsedRequest) *http.Request {
	// Request line: method, target, version.
	sp := bytes.IndexByte(head[:min(len(head), 16)], ' ')
	if sp <= 0 {
		return nil
	}
	for _, c := range head[:sp] {
		if !httpguts.IsTokenRune(rune(c)) {
			return nil
		}
	}
	tEnd := sp + 1
	for tEnd < len(head) && head[tEnd] != ' ' {
		tEnd++
	}
	target := head[sp+1 : tEnd]
	if len(target) == 0 || target[0] != '/' || (len(target) > 1 && target[1] == '/') || tEnd == len(head) {
		return nil
	}
	q := -1
	for i, c := range target {
		if q < 0 && c == '?' {
			q = i
			continue
		}
		if (q < 0 && !pathBytes[c]) || (q >= 0 && !queryBytes[c]) {
			return nil
		}
	}
	rest := head[tEnd+1:]
	if len(rest) < len("HTTP/1.1\r\n") || string(rest[:len("HTTP/1.")]) != "HTTP/1." || rest[8] != '\r' || rest[9] != '\n' {
		return nil
	}
	minor := int(rest[7]) - '0'
	if minor != 0 && minor != 1 {
		return nil
	}
	n := -1 // field lines: the lines after the request line, but the blank one
	for _, c := range rest[10:] {
		if c == '\n' {
			n++
		}
	}
	if n < 0 {
		return nil
	}
	// One string holds the whole head; one allocation the request, its URL
	// and (up to 8 fields) the values.
	s := string(head)
	pos := tEnd + 1 + 10
	if box == nil {
		box = new(parsedRequest)
	}
	strs := box.values[:]
	if n > len(box.values) {
		strs = make([]string, n)
	} else {
		clear(strs)
	}
	strs = strs[:n]
	h := box.header
	if h == nil || n > 8 {
		h = make(http.Header, n)
		box.header = h
	} else {
		clear(h)
	}
	host, sawHost := "", false
	for i := 0; ; i++ {
		eol := strings.IndexByte(s[pos:], '\n')
		if eol < 1 || s[pos+eol-1] != '\r' {
			return nil
		}
		line := s[pos : pos+eol-1]
		pos += eol + 1
		if line == "" {
			break
		}
		colon := strings.IndexByte(line, ':')
		if colon <= 0 || i == len(strs) {
			return nil
		}
		name := line[:colon]
		if !httpguts.ValidHeaderFieldName(name) {
			return nil
		}
		v := line[colon+1:]
		for j := 0; j < len(v); j++ {
			if c := v[j]; (c < ' ' && c != '\t') || c >= 0x7f {
				return nil
			}
		}
		v = strings.Trim(v, " \t")
		key, ok := commonFields[name]
		if !ok {
			key = textproto.CanonicalMIMEHeaderKey(name)
			switch key {
			case "Connection", "Content-Length", "Transfer-Encoding", "Pragma", "Trailer", "Host":
				return nil // spelled otherwise than commonFields knows it: ReadRequest's
			}
		}
		if key == "Host" {
			// Not in the header map (ReadRequest moves it to Host).
			if sawHost {
				return nil // two: ReadRequest refuses them
			}
			host, sawHost = v, true
			continue
		}
		strs[i] = v
		if old := h[key]; old != nil {
			h[key] = append(old, v)
		} else {
			h[key] = strs[i : i+1 : i+1]
		}
	}
	if pos != len(s) {
		return nil
	}
	method, ok := knownMethods[s[:sp]]
	if !ok {
		method = s[:sp]
	}
	rawTarget := s[sp+1 : tEnd]
	u := &box.url
	*u = url.URL{Path: rawTarget}
	if q >= 0 {
		u.Path, u.RawQuery = rawTarget[:q], rawTarget[q+1:]
		u.ForceQuery = u.RawQuery == ""
	}
	req := &box.req
	*req = http.Request{Method: method, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: minor, Header: h,
		Body: http.NoBody, Host: host, RequestURI: rawTarget}
	if minor == 0 {
		req.Proto = "HTTP/1.0"
		req.Close = true // without a Connection field, HTTP/1.0 closes
	}
	return req
}

// parsedRequest is what quickParse allocates at once.
type parsedRequest struct {
	req    http.Request
	url    url.URL
	values [8]string
	header http.Header
}
