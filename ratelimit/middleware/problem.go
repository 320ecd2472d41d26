package middleware

// A problem body is written without reflection: the same bytes as
// encoding/json gives for Problem (field order, omitempty, HTML-safe
// escaping), checked by TestProblemJSON_SameAsEncodingJSON.

import (
	"math"
	"net/http"
	"strconv"
	"unicode/utf8"
)

func appendProblem(b []byte, p *Problem) []byte {
	b = append(b, `{"type":`...)
	b = appendJSONString(b, p.Type)
	b = append(b, `,"title":`...)
	b = appendJSONString(b, p.Title)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(p.Status), 10)
	b = append(b, `,"detail":`...)
	b = appendJSONString(b, p.Detail)
	if p.Instance != "" {
		b = append(b, `,"instance":`...)
		b = appendJSONString(b, p.Instance)
	}
	if p.Rule != "" {
		b = append(b, `,"rule":`...)
		b = appendJSONString(b, p.Rule)
	}
	if p.Policy != "" {
		b = append(b, `,"policy":`...)
		b = appendJSONString(b, p.Policy)
	}
	if p.Limit != 0 {
		b = append(b, `,"limit":`...)
		b = strconv.AppendInt(b, p.Limit, 10)
	}
	if p.WindowSeconds != 0 {
		b = append(b, `,"window_seconds":`...)
		b = appendJSONFloat(b, p.WindowSeconds)
	}
	if p.RetryAfterSeconds != nil {
		b = append(b, `,"retry_after_seconds":`...)
		b = strconv.AppendInt(b, *p.RetryAfterSeconds, 10)
	}
	if p.Blocked {
		b = append(b, `,"blocked":true`...)
	}
	return append(b, '}', '\n')
}

// appendJSONFloat formats f as encoding/json does: 'f' notation, or 'e'
// below 1e-6 and from 1e21 on, with a two-digit exponent cut to one.
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendJSONString escapes as encoding/json does (HTML-safe).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			// An invalid byte is the replacement character, unescaped, as
			// encoding/json writes it since Go 1.27 (before: "\ufffd").
			b = utf8.AppendRune(b, utf8.RuneError)
		case r == '\u2028' || r == '\u2029':
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&15])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// writeProblemBody sends p as the response.
func writeProblemBody(w http.ResponseWriter, p *Problem) {
	body := appendProblem(make([]byte, 0, 512), p)
	h := w.Header()
	vals := make([]string, 2)
	vals[0] = problemJSON
	vals[1] = strconv.Itoa(len(body))
	h["Content-Type"], h["Content-Length"] = vals[0:1:1], vals[1:2:2]
	w.WriteHeader(p.Status)
	_, _ = w.Write(body) // the status is sent; a failed write means the client left
}
