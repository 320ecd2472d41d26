package gateway

import (
	"bufio"
	"bytes"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// quickParseSeeds are heads quickParse takes, and heads it must leave to
// ReadRequest.
var quickParseSeeds = []string{
	"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: Go-http-client/1.1\r\nAccept-Encoding: gzip\r\n\r\n",
	"HEAD /a/b;c=d?x=1&y=%41 HTTP/1.0\r\nhost: a\r\nx-forwarded-for: 1.2.3.4, 5.6.7.8\r\nX-Forwarded-For: 9.9.9.9\r\n\r\n",
	"GET /? HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /a?? HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /a?b? HTTP/1.1\r\nHost: x\r\n\r\n",
	"DELETE /x HTTP/1.1\r\nHost:   padded \t \r\nX-Empty:\r\nx-odd_Name: v\r\n\r\n",
	"GET /x HTTP/1.1\r\n\r\n",
	"PURGE /x HTTP/1.1\r\nHost: x\r\n\r\n",
	// Left to ReadRequest:
	"GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost: a\r\nhOST: b\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost: \r\nHost: \r\n\r\n",
	"GET /x HTTP/1.1\r\nConnection: close\r\n\r\n",
	"GET /x HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
	"GET /x HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
	"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
	"GET /x HTTP/1.1\r\nPragma: no-cache\r\n\r\n",
	"GET /a%2Fb HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /a!b HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET //evil/x HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET http://x/y HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET * HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /x HTTP/1.2\r\nHost: x\r\n\r\n",
	"GET /x HTTP/2.0\r\nHost: x\r\n\r\n",
	"GET /x  HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost : x\r\n\r\n",
	"GET /x HTTP/1.1\r\nX: \x01\r\n\r\n",
	"GET /x HTTP/1.1\r\nX: caf\xc3\xa9\r\n\r\n",
	"G\x00T /x HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /x HTTP/1.1\r\n: x\r\n\r\n",
	"GET /x#frag HTTP/1.1\r\nHost: x\r\n\r\n",
}

// FuzzQuickParse: what quickParse accepts, ReadRequest reads to the same
// request (method, target, URL, version, fields, Host, Close, body).
func FuzzQuickParse(f *testing.F) {
	for _, s := range quickParseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, head []byte) {
		var scan headScan
		scan.reset()
		n := scan.feed(head)
		if !scan.done || n != len(head) {
			return // not one whole head: the loop never parses it
		}
		if status, _ := scan.verdict(); status != 0 {
			return
		}
		// Into a box a seed was parsed into first: nothing of it may stay.
		box := new(parsedRequest)
		if quickParseInto([]byte(quickParseSeeds[2]), box) == nil {
			t.Fatal("seed 2 not taken")
		}
		got := quickParseInto(head, box)
		if got == nil {
			return
		}
		want, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
		if err != nil {
			t.Fatalf("%q: quickParse took what ReadRequest refuses: %v", head, err)
		}
		type view struct {
			Method, RequestURI, URL, Proto, Host string
			Major, Minor                         int
			Header                               http.Header
			Close                                bool
			ContentLength                        int64
			NoBody                               bool
			TE                                   []string
			URLFields                            [4]any
		}
		v := func(r *http.Request) view {
			return view{r.Method, r.RequestURI, r.URL.String(), r.Proto, r.Host, r.ProtoMajor, r.ProtoMinor, r.Header, r.Close,
				r.ContentLength, r.Body == http.NoBody, r.TransferEncoding,
				[4]any{r.URL.Path, r.URL.RawPath, r.URL.RawQuery, r.URL.ForceQuery}}
		}
		if g, w := v(got), v(want); !reflect.DeepEqual(g, w) {
			t.Fatalf("%q:\nquickParse %+v\nReadRequest %+v", head, g, w)
		}
	})
}

// The seeds quickParse must take, and those it must leave to ReadRequest.
func TestQuickParse_TakesTheSimpleCaseOnly(t *testing.T) {
	for i, s := range quickParseSeeds {
		took := quickParseInto([]byte(s), nil) != nil
		if want := i < 9; took != want {
			t.Errorf("%q: taken %v, want %v", s, took, want)
		}
	}
	if strings.Count(quickParseSeeds[2], "\n") == 0 {
		t.Fatal("seeds broken")
	}
}
