package gateway

import (
	"bytes"
	"testing"
)

// referenceScan is what headScan must find, computed the plain way over
// the whole head: split at LF, each line checked on its own.
func referenceScan(head []byte) headScan {
	r := headScan{}
	first := true
	for {
		i := bytes.IndexByte(head, '\n')
		if i < 0 {
			// The head goes on: not done; a folded line shows at its start.
			if !first && len(head) > 0 && (head[0] == ' ' || head[0] == '\t') {
				r.obsFold = true
			}
			if !first {
				r.hostBad = r.hostBad || referenceHostBad(head)
			}
			return r
		}
		line := head[:i]
		head = head[i+1:]
		if len(line) == 0 || line[len(line)-1] != '\r' {
			r.bareLF = true
		} else {
			line = line[:len(line)-1]
		}
		if len(line) == 0 {
			r.done = true
			return r
		}
		if !first {
			if line[0] == ' ' || line[0] == '\t' {
				r.obsFold = true
			}
			lower := bytes.ToLower(line)
			r.sawCL = r.sawCL || bytes.HasPrefix(lower, []byte("content-length:"))
			r.sawTE = r.sawTE || bytes.HasPrefix(lower, []byte("transfer-encoding:"))
			r.hostBad = r.hostBad || referenceHostBad(line)
		}
		first = false
	}
}

// referenceHostBad: line is a Host field whose value, CRs dropped and
// trimmed of whitespace, has a byte that is not a host's.
func referenceHostBad(line []byte) bool {
	if len(line) < len("host:") || !bytes.EqualFold(line[:len("host:")], []byte("host:")) {
		return false
	}
	v := bytes.Trim(bytes.ReplaceAll(line[len("host:"):], []byte("\r"), nil), " \t")
	for _, c := range v {
		if !validHostByte(c) {
			return true
		}
	}
	return false
}

// FuzzHeadScan: headScan, fed a head in arbitrary pieces (as reads
// deliver it), finds exactly what the reference finds on the whole head.
func FuzzHeadScan(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"GET /a HTTP/1.1\nHost: x\n\n",
		"GET /a HTTP/1.1\r\nX: a\r\n b\r\n\r\n",
		"GET /a HTTP/1.1\r\nTRANSFER-ENCODING: chunked\r\nX-Long-Header-Name-Here: " + string(bytes.Repeat([]byte("v"), 100)) + "\r\n\r\n",
		"GET http://a/ HTTP/1.1\r\nHost: a b\r\n\r\n", "GET / HTTP/1.1\r\nhOST:\t[::1]:80 \r\n\r\n",
		"GET / HTTP/1.1\r\nHost: u@h\r\nX: y\r\n\r\n", "GET / HTTP/1.1\r\nHostX: a b\r\n\r\n",
		"\r\n", "\n", "GET\r\r\n\r\n", "GET / HTTP/1.1\r\nContent-Length:\r\n\r\n",
	} {
		f.Add([]byte(s), uint64(0x9e3779b97f4a7c15))
	}
	f.Fuzz(func(t *testing.T, head []byte, splits uint64) {
		want := referenceScan(head)
		var got headScan
		got.reset()
		rest := head
		for len(rest) > 0 {
			n := int(splits%7) + 1 // pieces of 1..7 bytes, then a long one
			splits = splits/7 + 1
			if splits%5 == 0 {
				n = len(rest)
			}
			n = min(n, len(rest))
			got.feed(rest[:n])
			rest = rest[n:]
		}
		if got.done != want.done || got.bareLF != want.bareLF || got.obsFold != want.obsFold ||
			got.sawCL != want.sawCL || got.sawTE != want.sawTE || got.hostBad != want.hostBad {
			t.Fatalf("head %q:\n got done=%v bareLF=%v obsFold=%v CL=%v TE=%v hostBad=%v\nwant done=%v bareLF=%v obsFold=%v CL=%v TE=%v hostBad=%v",
				head, got.done, got.bareLF, got.obsFold, got.sawCL, got.sawTE, got.hostBad,
				want.done, want.bareLF, want.obsFold, want.sawCL, want.sawTE, want.hostBad)
		}
	})
}
