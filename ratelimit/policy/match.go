package policy

// A request is matched on its normalized path only, so that no spelling of a
// path the upstream routes to one handler escapes that handler's rule:
// unreserved characters percent-decoded, ";" matrix parameters, empty
// segments ("//", a trailing "/") and dot segments removed, and ASCII case
// folded unless the policy is case-sensitive (Express and NestJS route case
// insensitively by default). Keys name the route template that matched
// ("/api/items/{id}"), never the raw path, unless a rule asks for "path".

import (
	"strings"
)

// NormalizePath returns the form of an escaped request path (URL.EscapedPath)
// that rules match and keys hold. It always starts with "/".
func NormalizePath(escaped string, caseSensitive bool) string {
	if isNormal(escaped, caseSensitive) {
		return escaped
	}
	segs := make([]string, 0, 8)
	for _, seg := range strings.Split(escaped, "/") {
		if i := strings.IndexByte(seg, ';'); i >= 0 {
			seg = seg[:i] // matrix parameters: /login;jsessionid=x
		}
		seg = decodeUnreserved(seg)
		switch seg {
		case "", ".":
			continue
		case "..":
			if len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
			continue
		}
		if !caseSensitive {
			seg = strings.ToLower(seg)
		}
		segs = append(segs, seg)
	}
	return "/" + strings.Join(segs, "/")
}

// isNormal reports a path NormalizePath would return unchanged (the usual
// case, checked without allocating).
func isNormal(p string, caseSensitive bool) bool {
	if len(p) == 0 || p[0] != '/' || (len(p) > 1 && p[len(p)-1] == '/') {
		return false
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '%' || c == ';':
			return false
		case c == '/' && i+1 < len(p) && (p[i+1] == '/' || p[i+1] == '.'):
			return false
		case !caseSensitive && 'A' <= c && c <= 'Z':
			return false
		}
	}
	return true
}

// decodeUnreserved decodes %XX escapes of unreserved characters (RFC 3986
// §2.3: ALPHA DIGIT - . _ ~) and upper-cases the hex of the others, so that
// every spelling of one path is one string.
func decodeUnreserved(seg string) string {
	if !strings.Contains(seg, "%") {
		return seg
	}
	var b strings.Builder
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if c != '%' || i+2 >= len(seg) {
			b.WriteByte(c)
			continue
		}
		hi, ok1 := unhex(seg[i+1])
		lo, ok2 := unhex(seg[i+2])
		if !ok1 || !ok2 {
			b.WriteByte(c)
			continue
		}
		v := hi<<4 | lo
		if isUnreserved(v) {
			b.WriteByte(v)
		} else {
			b.WriteByte('%')
			b.WriteByte(upperHex[v>>4])
			b.WriteByte(upperHex[v&15])
		}
		i += 2
	}
	return b.String()
}

const upperHex = "0123456789ABCDEF"

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// pattern is one compiled path of a rule: literal segments and {param}
// segments, matched as a prefix on segment boundaries.
type pattern struct {
	// template is the normalized pattern, "/api/items/{id}": what a "route"
	// key part holds.
	template string
	segs     []string // "" for a {param} segment
	literals int
}

func compilePattern(p string, caseSensitive bool) (pattern, bool) {
	var segs []string
	literals := 0
	for _, seg := range strings.Split(p, "/") {
		switch {
		case seg == "":
			continue
		case strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") && len(seg) > 2,
			strings.HasPrefix(seg, ":") && len(seg) > 1: // Express's spelling, /items/:id
			segs = append(segs, "")
			continue
		case strings.ContainsAny(seg, "{}"):
			return pattern{}, false
		}
		seg = decodeUnreserved(seg)
		if !caseSensitive {
			seg = strings.ToLower(seg)
		}
		segs = append(segs, seg)
		literals++
	}
	var t strings.Builder
	names := strings.Split(p, "/")
	i := 0
	for _, seg := range names {
		if seg == "" {
			continue
		}
		t.WriteByte('/')
		switch {
		case segs[i] == "" && seg[0] == ':':
			t.WriteString("{" + seg[1:] + "}")
		case segs[i] == "":
			t.WriteString(seg)
		default:
			t.WriteString(segs[i])
		}
		i++
	}
	if t.Len() == 0 {
		t.WriteByte('/')
	}
	return pattern{template: t.String(), segs: segs, literals: literals}, true
}

// match reports whether the normalized path starts with the pattern's
// segments.
func (p *pattern) match(path string) bool {
	rest := path
	for _, want := range p.segs {
		if len(rest) < 2 || rest[0] != '/' {
			return false
		}
		rest = rest[1:]
		seg := rest
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			seg, rest = rest[:i], rest[i:]
		} else {
			rest = ""
		}
		if want != "" && seg != want {
			return false
		}
	}
	return true
}

// better reports whether p is a more specific match than q: more segments,
// then more literal ones.
func (p *pattern) better(q *pattern) bool {
	if len(p.segs) != len(q.segs) {
		return len(p.segs) > len(q.segs)
	}
	return p.literals > q.literals
}
