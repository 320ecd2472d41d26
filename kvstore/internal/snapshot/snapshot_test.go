package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
)

func encode(t testing.TB, seq uint64, entries []Entry) []byte {
	var buf bytes.Buffer
	i := 0
	_, err := Write(context.Background(), &buf, Header{Seq: seq, Count: uint64(len(entries))}, func() (Entry, bool) {
		if i == len(entries) {
			return Entry{}, false
		}
		i++
		return entries[i-1], true
	})
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

var lim = Limits{MaxKey: 1 << 10, MaxValue: 1 << 20}

func TestSnapshot_RoundTripAndEveryBitFlipIsDetected(t *testing.T) {
	var entries []Entry
	for i := 0; i < 20; i++ {
		entries = append(entries, Entry{Key: fmt.Sprintf("k%02d", i), Value: bytes.Repeat([]byte{byte(i)}, i)})
	}
	b := encode(t, 42, entries)
	var got []Entry
	h, err := Read(bytes.NewReader(b), int64(len(b)), lim, func(k, v []byte) error {
		got = append(got, Entry{Key: string(k), Value: bytes.Clone(v)})
		return nil
	})
	if err != nil || h.Seq != 42 || h.Count != 20 || len(got) != 20 {
		t.Fatalf("read back: %+v, %d entries, %v", h, len(got), err)
	}
	for i := range got {
		if got[i].Key != entries[i].Key || !bytes.Equal(got[i].Value, entries[i].Value) {
			t.Fatalf("entry %d differs", i)
		}
	}
	for off := range b {
		bad := bytes.Clone(b)
		bad[off] ^= 1
		if _, err := Read(bytes.NewReader(bad), int64(len(bad)), lim, func(k, v []byte) error { return nil }); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("bit flip at %d not detected: %v", off, err)
		}
	}
}

func TestSnapshot_WriteStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var buf bytes.Buffer
	_, err := Write(ctx, &buf, Header{Count: 1}, func() (Entry, bool) { return Entry{Key: "k"}, true })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func FuzzDecodeSnapshot(f *testing.F) {
	f.Add(encode(f, 1, []Entry{{Key: "a", Value: []byte("1")}, {Key: "b"}}))
	f.Add(encode(f, 0, nil))
	f.Add([]byte("DKVSNAP\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var total int
		_, err := Read(bytes.NewReader(b), int64(len(b)), lim, func(k, v []byte) error {
			total += len(k) + len(v)
			return nil
		})
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("untyped error %v", err)
		}
		if total > len(b) {
			t.Fatalf("decoded %d bytes of entries from a %d-byte file", total, len(b))
		}
	})
}
