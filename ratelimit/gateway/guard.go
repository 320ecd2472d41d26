package gateway

// guard holds what the gateway checks beyond net/http's own parser before
// a request reaches the limit: a request net/http accepts but a peer (a
// cache, a second proxy, the upstream) could frame or route otherwise is
// refused, and the connection closed so nothing behind it is read; a path
// with an encoded slash is refused, decoded or kept as the policy says.

import (
	"net/http"
	"net/url"

	"github.com/devkit-go/devkit/ratelimit/middleware"
	"github.com/devkit-go/devkit/ratelimit/policy"
)

// guard wraps next with the gateway's own checks of a parsed request.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if status, why := checkRequest(r); status != 0 {
			refuse(w, status, why)
			return
		}
		if escaped := r.URL.EscapedPath(); policy.HasEscapedSlash(escaped) {
			switch s.mw.Policy().EscapedSlashes {
			case policy.EscapedSlashesKeep:
			case policy.EscapedSlashesUnescape:
				r = withEscapedPath(r, policy.UnescapeSlashes(escaped))
			default:
				middleware.WriteError(w, r, http.StatusBadRequest,
					"The path holds an encoded slash or backslash (%2F, %5C), which this API does not accept.")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// withEscapedPath is r with its path replaced: what the limit matches is
// then what goes upstream.
func withEscapedPath(r *http.Request, escaped string) *http.Request {
	u := *r.URL
	u.RawPath = escaped
	if p, err := url.PathUnescape(escaped); err == nil {
		u.Path = p
	}
	r2 := r.WithContext(r.Context()) // a shallow copy: a handler leaves r as it got it
	r2.URL = &u
	return r2
}

// checkRequest is the status a request is refused with, 0 when it passes.
func checkRequest(r *http.Request) (int, string) {
	switch {
	case r.ProtoMajor != 1 && r.TLS == nil, r.Method == "PRI":
		// "PRI * HTTP/2.0" is HTTP/2's preface sent in clear text, which
		// this server does not speak; HTTP/2 comes over TLS only.
		return http.StatusHTTPVersionNotSupported, "unsupported protocol version"
	case r.Method == http.MethodConnect:
		// A tunnel is not an API request: never counted, never forwarded.
		return http.StatusMethodNotAllowed, "CONNECT is not served"
	case r.RequestURI == "*":
		// net/http answers OPTIONS * itself; any other method with the
		// target * names no resource, and is never forwarded as "/*".
		return http.StatusBadRequest, "request target * is for OPTIONS only"
	}
	return 0, ""
}

// refuse answers a request the gateway will not serve, and closes the
// connection (HTTP/1.1) so nothing sent behind it is read as a request.
func refuse(w http.ResponseWriter, status int, why string) {
	h := w.Header()
	h.Set("Connection", "close")
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write([]byte(why + "\n"))
}
