package policy

// A path whose slashes are partly encoded (%2F, %5C) is one route to the
// rules, which split on "/" only, and may be another to an upstream that
// decodes them before routing: "/free/..%2flimited" matches /free here and
// is /limited to it. A proxy therefore refuses such a path, or decodes it
// before matching and forwards what it matched (Envoy's
// path_with_escaped_slashes_action), unless the policy keeps it as sent.

import "strings"

// EscapedSlashes is what a proxy does with a request path that holds an
// encoded slash or backslash.
type EscapedSlashes string

// The actions of defaults.escaped_slashes.
const (
	// EscapedSlashesReject answers 400 (the default).
	EscapedSlashesReject EscapedSlashes = "reject"
	// EscapedSlashesUnescape decodes %2F and %5C to "/" before matching,
	// and the decoded path is what goes upstream (a backslash is a slash
	// to Windows servers and to some frameworks).
	EscapedSlashesUnescape EscapedSlashes = "unescape"
	// EscapedSlashesKeep matches and forwards the path as sent: safe only
	// when the upstream never decodes them before routing.
	EscapedSlashesKeep EscapedSlashes = "keep"
)

// HasEscapedSlash reports whether an escaped path (URL.EscapedPath) holds
// %2F or %5C, in either case.
func HasEscapedSlash(escaped string) bool {
	for i := strings.IndexByte(escaped, '%'); i >= 0 && i+2 < len(escaped); {
		if isEscapedSlash(escaped[i+1], escaped[i+2]) {
			return true
		}
		j := strings.IndexByte(escaped[i+1:], '%')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return false
}

// UnescapeSlashes is an escaped path with every %2F and %5C turned into
// "/".
func UnescapeSlashes(escaped string) string {
	var b strings.Builder
	for i := 0; i < len(escaped); i++ {
		if escaped[i] == '%' && i+2 < len(escaped) && isEscapedSlash(escaped[i+1], escaped[i+2]) {
			b.WriteByte('/')
			i += 2
			continue
		}
		b.WriteByte(escaped[i])
	}
	return b.String()
}

func isEscapedSlash(hi, lo byte) bool {
	return (hi == '2' && (lo == 'f' || lo == 'F')) || (hi == '5' && (lo == 'c' || lo == 'C'))
}
