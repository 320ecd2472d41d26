package envoyrls_test

import (
	"bytes"
	"encoding/binary"
	"net"
	"strconv"
	"testing"
	"time"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/proto"

	"github.com/devkit-go/devkit/ratelimit"
	"github.com/devkit-go/devkit/ratelimit/memory"
)

// TestServe_NoFlowControlPingPerCall: a connection that carries one call at
// a time (as each of Envoy's workers may) gets its answers without a PING
// from the server to answer. gRPC's dynamic flow-control window probes with
// a window update and a PING after the first request that follows each
// PING's acknowledgement: about one PING per call, two frames more on each
// side. The raw HTTP/2 client counts the frames the server sends.
func TestServe_NoFlowControlPingPerCall(t *testing.T) {
	addr := serveWith(t, ratelimit.New(memory.New(memory.Options{}), ratelimit.Options{}))
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	const calls = 20
	pings := 0
	for i := range calls {
		stream := uint32(2*i + 1)
		writeCall(t, fr, stream, &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*commonv3.RateLimitDescriptor{
			{Entries: []*commonv3.RateLimitDescriptor_Entry{{Key: "path", Value: "/api/items/" + strconv.Itoa(i)}, {Key: "tenant", Value: "t"}}},
		}})
		for answered := false; !answered; {
			f, err := fr.ReadFrame()
			if err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					if err := fr.WriteSettingsAck(); err != nil {
						t.Fatal(err)
					}
				}
			case *http2.PingFrame:
				if !f.IsAck() {
					pings++
					if err := fr.WritePing(true, f.Data); err != nil {
						t.Fatal(err)
					}
				}
			case *http2.HeadersFrame:
				answered = f.StreamID == stream && f.StreamEnded()
			case *http2.RSTStreamFrame:
				t.Fatalf("call %d: stream reset: %v", i, f.ErrCode)
			case *http2.GoAwayFrame:
				t.Fatalf("call %d: GOAWAY: %v", i, f.ErrCode)
			}
		}
	}
	if pings > 0 {
		t.Errorf("the server sent %d PINGs over %d calls, one at a time; want none (a static flow-control window)", pings, calls)
	}
}

// writeCall writes one unary ShouldRateLimit call on stream: its headers,
// then the request as one gRPC message ending the stream.
func writeCall(t *testing.T, fr *http2.Framer, stream uint32, req *rlsv3.RateLimitRequest) {
	t.Helper()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, h := range [][2]string{
		{":method", "POST"}, {":scheme", "http"}, {":authority", "rls"},
		{":path", "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"},
		{"content-type", "application/grpc"}, {"te", "trailers"},
	} {
		if err := enc.WriteField(hpack.HeaderField{Name: h[0], Value: h[1]}); err != nil {
			t.Fatal(err)
		}
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	msg, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 5, 5+len(msg)) // uncompressed, then the length
	binary.BigEndian.PutUint32(data[1:], uint32(len(msg)))
	if err := fr.WriteData(stream, true, append(data, msg...)); err != nil {
		t.Fatal(err)
	}
}
