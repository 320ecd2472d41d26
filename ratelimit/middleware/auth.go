package middleware

// The auth endpoint decides for a request another server received (nginx's
// auth_request, Traefik's forwardAuth, Caddy's forward_auth): the original
// method and URI come in headers, and those headers are believed from a
// trusted proxy only (the policy's identity.trusted_proxies); any other peer
// is refused 403 before anything is counted, so a client can neither spend
// nor probe another route's budget. Each call is one check: the proxy
// calls once per request, so each request is counted once.

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/devkit-go/devkit/ratelimit/policy"
)

// Headers that carry the original request to the auth endpoint: nginx's
// convention (set with proxy_set_header in the auth_request location) and,
// when absent, the X-Forwarded-* spelling of Traefik and Caddy.
const (
	HeaderOriginalURI      = "X-Original-URI"
	HeaderOriginalMethod   = "X-Original-Method"
	HeaderForwardedURI     = "X-Forwarded-Uri"
	HeaderForwardedMethod  = "X-Forwarded-Method"
	authDenyStatusQueryKey = "deny_status"
)

// AuthHandler answers whether the request described by the auth headers
// may pass: 204 when it may (with the rate-limit fields of a limited
// request, which the proxy can copy to its answer), 429 with the fields,
// Retry-After and a problem+json body when it is denied, 503 when a
// fail-closed rule cannot reach its store. A query parameter
// deny_status=401|403 answers denials with that status instead: nginx's
// auth_request copies fields (auth_request_set) from 2xx, 401 and 403
// answers only, and turns any other status into a 500.
//
// A request without the original URI is 400; an encoded slash in it is
// 400 when the policy rejects those (the proxy forwards its own URI, so
// "unescape" only decodes what is matched).
func (m *Middleware) AuthHandler() http.Handler {
	allowed := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	limited := m.Handler(allowed)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := m.policy.Load()
		if !p.Identity.Trusts(r.RemoteAddr) {
			WriteError(w, r, http.StatusForbidden,
				"The auth endpoint answers trusted proxies only (identity.trusted_proxies); this peer is not one.")
			return
		}
		deny := http.StatusTooManyRequests
		if s := r.URL.Query().Get(authDenyStatusQueryKey); s != "" {
			v, err := strconv.Atoi(s)
			if err != nil || (v != http.StatusUnauthorized && v != http.StatusForbidden && v != http.StatusTooManyRequests) {
				WriteError(w, r, http.StatusBadRequest, "deny_status must be 401, 403 or 429")
				return
			}
			deny = v
		}
		orig, status, why := originalRequest(r, p)
		if status != 0 {
			WriteError(w, r, status, why)
			return
		}
		if deny != http.StatusTooManyRequests {
			w = &denyStatusWriter{ResponseWriter: w, status: deny}
		}
		limited.ServeHTTP(w, orig)
	})
}

// originalRequest is the request the proxy received, as the auth headers
// describe it: its method and URI, the auth request's own headers (the
// proxy passes the client's), and the auth request's peer, the proxy, from
// which the client address is read as from any trusted proxy.
func originalRequest(r *http.Request, p *policy.Policy) (*http.Request, int, string) {
	uri := r.Header.Get(HeaderOriginalURI)
	if uri == "" {
		uri = r.Header.Get(HeaderForwardedURI)
	}
	method := r.Header.Get(HeaderOriginalMethod)
	if method == "" {
		method = r.Header.Get(HeaderForwardedMethod)
	}
	switch {
	case uri == "":
		return nil, http.StatusBadRequest, "X-Original-URI (or X-Forwarded-Uri) is required: the URI of the request to decide"
	case method == "":
		return nil, http.StatusBadRequest, "X-Original-Method (or X-Forwarded-Method) is required: the method of the request to decide"
	case !validToken(method):
		return nil, http.StatusBadRequest, "X-Original-Method is not an HTTP method"
	}
	u, err := url.ParseRequestURI(uri)
	if err != nil || u.Path == "" || u.Path[0] != '/' {
		return nil, http.StatusBadRequest, "X-Original-URI is not a request URI (an absolute path, with its query)"
	}
	if escaped := u.EscapedPath(); policy.HasEscapedSlash(escaped) {
		switch p.EscapedSlashes {
		case policy.EscapedSlashesKeep:
		case policy.EscapedSlashesUnescape:
			u.RawPath = policy.UnescapeSlashes(escaped)
			if dec, err := url.PathUnescape(u.RawPath); err == nil {
				u.Path = dec
			}
		default:
			return nil, http.StatusBadRequest, "The path holds an encoded slash or backslash (%2F, %5C), which this API does not accept."
		}
	}
	orig := r.Clone(r.Context())
	orig.Method = method
	orig.URL = u
	orig.RequestURI = uri
	orig.Body, orig.ContentLength = http.NoBody, 0
	return orig, 0, ""
}

// validToken reports a method that is an RFC 9110 token.
func validToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return s != ""
}

// denyStatusWriter sends a denial (429) with another status.
type denyStatusWriter struct {
	http.ResponseWriter
	status int
}

func (w *denyStatusWriter) WriteHeader(code int) {
	if code == http.StatusTooManyRequests {
		code = w.status
	}
	w.ResponseWriter.WriteHeader(code)
}
