package wal

import (
	"bytes"
	"errors"
	"runtime"
	"testing"
)

func TestRecord_RoundTrip(t *testing.T) {
	recs := []Record{
		{Type: TypeSet, Seq: 1, Key: []byte("k"), Value: []byte("v")},
		{Type: TypeSet, Seq: 2, Key: []byte{0, 1, 2}, Value: nil},
		{Type: TypeDelete, Seq: 1 << 40, Key: bytes.Repeat([]byte("x"), 300)},
		{Type: TypeSetTTL, Seq: 3, Key: []byte("t"), Value: []byte("v"), ExpireAt: 1_700_000_000_123_456_789},
		{Type: TypeFlush, Seq: 4},
	}
	for _, r := range recs {
		b := AppendRecord(nil, r)
		want := EncodedSize(r.Key, r.Value)
		switch r.Type {
		case TypeSetTTL:
			want += ttlSize
		case TypeFlush:
			want = RecordHeaderSize
		}
		if len(b) != want {
			t.Fatalf("encoded %d bytes, EncodedSize says %d", len(b), EncodedSize(r.Key, r.Value))
		}
		got, n, err := DecodeRecord(b, MaxPayload(1024, 1024))
		if err != nil || n != len(b) || got.Type != r.Type || got.Seq != r.Seq || !bytes.Equal(got.Key, r.Key) || !bytes.Equal(got.Value, r.Value) || got.ExpireAt != r.ExpireAt {
			t.Fatalf("round trip of %+v: %+v, %d, %v", r, got, n, err)
		}
	}
}

func TestDecodeRecord_LyingLengthIsRejectedBeforeAllocation(t *testing.T) {
	b := AppendRecord(nil, Record{Type: TypeSet, Seq: 1, Key: []byte("k"), Value: []byte("v")})
	b[4], b[5], b[6], b[7] = 0xff, 0xff, 0xff, 0x7f // ~2 GiB
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, _, err := DecodeRecord(b, MaxPayload(64<<10, 256<<20)); !errors.Is(err, ErrBadRecord) {
		t.Fatalf("err = %v, want ErrBadRecord", err)
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 4<<10 { // the error message only
		t.Fatalf("decoding a lying length allocated %d bytes", n)
	}
	b[7] = 0 // within the bound, beyond the data
	if _, _, err := DecodeRecord(b, MaxPayload(64<<10, 256<<20)); !errors.Is(err, ErrTruncated) {
		t.Fatalf("err = %v, want ErrTruncated", err)
	}
}

func TestValidRecordAfter_FindsRecordsBehindGarbageButNotInZeros(t *testing.T) {
	var buf []byte
	buf = AppendHeader(buf, 1)
	buf = AppendRecord(buf, Record{Type: TypeSet, Seq: 1, Key: []byte("a"), Value: []byte("1")})
	damaged := len(buf)
	buf = append(buf, bytes.Repeat([]byte{0xAB}, 40)...)
	second := len(buf)
	buf = AppendRecord(buf, Record{Type: TypeSet, Seq: 3, Key: []byte("b"), Value: []byte("2")})
	off, ok := ValidRecordAfter(buf, damaged, 1, MaxPayload(1024, 1024))
	if !ok || off != second {
		t.Fatalf("ValidRecordAfter = %d, %v; want %d, true", off, ok, second)
	}
	zeros := append(AppendHeader(nil, 1), make([]byte, 4096)...)
	if _, ok := ValidRecordAfter(zeros, HeaderSize, 0, MaxPayload(1024, 1024)); ok {
		t.Fatal("found a record in a zero-filled tail")
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(AppendRecord(nil, Record{Type: TypeSet, Seq: 7, Key: []byte("key"), Value: []byte("value")}))
	f.Add(AppendRecord(nil, Record{Type: TypeDelete, Seq: 1, Key: []byte("k")}))
	f.Add(make([]byte, RecordHeaderSize))
	f.Add([]byte{})
	f.Add(AppendBatchRecord(nil, 9, []Op{{Type: TypeSet, Key: []byte("a"), Value: []byte("1")}, {Type: TypeDelete, Key: []byte("b")}},
		func(int, int, int, int, int) {}))
	f.Add(AppendRecord(nil, Record{Type: TypeSetTTL, Seq: 5, Key: []byte("t"), Value: []byte("v"), ExpireAt: 1 << 60}))
	f.Add(AppendRecord(nil, Record{Type: TypeFlush, Seq: 6}))
	f.Add(AppendBatchRecord(nil, 10, []Op{{Type: TypeSetTTL, Key: []byte("a"), Value: []byte("1"), ExpireAt: 99}, {Type: TypeDelete, Key: []byte("b")}},
		func(int, int, int, int, int) {}))
	f.Fuzz(func(t *testing.T, b []byte) {
		const maxPayload = 1 << 20
		r, n, err := DecodeRecord(b, maxPayload)
		if err != nil {
			if !errors.Is(err, ErrBadRecord) && !errors.Is(err, ErrTruncated) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if n < RecordHeaderSize || n > len(b) {
			t.Fatalf("size %d outside 17..%d", n, len(b))
		}
		// A record that decodes re-encodes to the same bytes.
		again := AppendRecord(nil, r)
		if r.Type == TypeBatch {
			var ops []Op
			ForEachOp(r.Batch, func(op Op) { ops = append(ops, op) })
			again = AppendBatchRecord(nil, r.Seq, ops, func(int, int, int, int, int) {})
		}
		if !bytes.Equal(again, b[:n]) {
			t.Fatalf("re-encoding differs:\n%x\n%x", again, b[:n])
		}
	})
}
