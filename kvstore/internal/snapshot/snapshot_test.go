package snapshot

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
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
		entries = append(entries, Entry{Key: fmt.Sprintf("k%02d", i), Value: bytes.Repeat([]byte{byte(i)}, i), ExpireAt: int64(i) * 1e15})
	}
	b := encode(t, 42, entries)
	var got []Entry
	h, err := Read(bytes.NewReader(b), int64(len(b)), lim, func(k, v []byte, exp int64, _ uint8) error {
		got = append(got, Entry{Key: string(k), Value: bytes.Clone(v), ExpireAt: exp})
		return nil
	})
	if err != nil || h.Seq != 42 || h.Count != 20 || len(got) != 20 {
		t.Fatalf("read back: %+v, %d entries, %v", h, len(got), err)
	}
	for i := range got {
		if got[i].Key != entries[i].Key || !bytes.Equal(got[i].Value, entries[i].Value) || got[i].ExpireAt != entries[i].ExpireAt {
			t.Fatalf("entry %d differs", i)
		}
	}
	for off := range b {
		bad := bytes.Clone(b)
		bad[off] ^= 1
		if _, err := Read(bytes.NewReader(bad), int64(len(bad)), lim, func(k, v []byte, _ int64, _ uint8) error { return nil }); !errors.Is(err, ErrCorrupt) {
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

// versionOne is a snapshot as the build before TTLs wrote it: seq 7, entries
// a=1 and b="", no expiry field.
var versionOne = func() []byte {
	b := []byte("DKVSNAP\n")
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = binary.LittleEndian.AppendUint64(b, 7)
	b = binary.LittleEndian.AppendUint64(b, 2)
	b = append(b, 1, 1, 'a', '1', 1, 0, 'b')
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}()

func TestSnapshot_VersionOneFilesStillRead(t *testing.T) {
	var got []string
	h, err := Read(bytes.NewReader(versionOne), int64(len(versionOne)), lim, func(k, v []byte, exp int64, _ uint8) error {
		got = append(got, fmt.Sprintf("%s=%s/%d", k, v, exp))
		return nil
	})
	if err != nil || h.Seq != 7 || fmt.Sprint(got) != "[a=1/0 b=/0]" {
		t.Fatalf("read v1: %+v %v %v", h, got, err)
	}
}

func FuzzDecodeSnapshot(f *testing.F) {
	f.Add(encode(f, 1, []Entry{{Key: "a", Value: []byte("1")}, {Key: "b"}}))
	f.Add(encode(f, 0, nil))
	f.Add([]byte("DKVSNAP\n"))
	f.Add(encode(f, 2, []Entry{{Key: "t", Value: []byte("v"), ExpireAt: 1 << 62}}))
	f.Add(versionOne)
	f.Fuzz(func(t *testing.T, b []byte) {
		var total int
		_, err := Read(bytes.NewReader(b), int64(len(b)), lim, func(k, v []byte, _ int64, _ uint8) error {
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

func TestSnapshot_KeysOutOfOrderAreCorruptEvenWithAGoodChecksum(t *testing.T) {
	for _, entries := range [][]Entry{
		{{Key: "b"}, {Key: "a"}},
		{{Key: "a"}, {Key: "a"}},
	} {
		b := encode(t, 1, entries)
		if _, err := Read(bytes.NewReader(b), int64(len(b)), lim, func(k, v []byte, _ int64, _ uint8) error { return nil }); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("keys %q, %q: err = %v, want ErrCorrupt", entries[0].Key, entries[1].Key, err)
		}
	}
}

// versionTwo is a snapshot as the build before collections wrote it: seq 9,
// entry a=1 expiring at 5, no kind field.
var versionTwo = func() []byte {
	b := []byte("DKVSNAP\n")
	b = binary.LittleEndian.AppendUint32(b, 2)
	b = binary.LittleEndian.AppendUint64(b, 9)
	b = binary.LittleEndian.AppendUint64(b, 1)
	b = append(b, 1, 1, 5, 'a', '1')
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}()

func TestSnapshot_VersionTwoFilesStillReadAsStrings(t *testing.T) {
	var got []string
	h, err := Read(bytes.NewReader(versionTwo), int64(len(versionTwo)), lim, func(k, v []byte, exp int64, kind uint8) error {
		got = append(got, fmt.Sprintf("%s=%s/%d/%d", k, v, exp, kind))
		return nil
	})
	if err != nil || h.Seq != 9 || fmt.Sprint(got) != "[a=1/5/0]" {
		t.Fatalf("read v2: %+v %v %v", h, got, err)
	}
}

func TestSnapshot_KindsRoundTrip(t *testing.T) {
	b := encode(t, 3, []Entry{{Key: "h", Value: []byte{1, 1, 'f', 1, 'v'}, Kind: 1}, {Key: "s", Value: []byte("x")}})
	var got []string
	if _, err := Read(bytes.NewReader(b), int64(len(b)), lim, func(k, v []byte, _ int64, kind uint8) error {
		got = append(got, fmt.Sprintf("%s/%d/%d", k, kind, len(v)))
		return nil
	}); err != nil || fmt.Sprint(got) != "[h/1/5 s/0/1]" {
		t.Fatalf("got %v, %v", got, err)
	}
}

func TestSnapshot_AnIntactNewerVersionIsRefusedAsNewerNotCalledDamaged(t *testing.T) {
	b := encode(t, 5, []Entry{{Key: "a", Value: []byte("1")}})
	withVersion := func(v uint32, fixCRC bool) []byte {
		bad := bytes.Clone(b)
		binary.LittleEndian.PutUint32(bad[8:], v)
		if fixCRC {
			binary.LittleEndian.PutUint32(bad[len(bad)-4:], crc32.Checksum(bad[:len(bad)-4], castagnoli))
		}
		return bad
	}
	read := func(b []byte) error {
		_, err := Read(bytes.NewReader(b), int64(len(b)), lim, func([]byte, []byte, int64, uint8) error { return nil })
		return err
	}
	if err := read(withVersion(version+1, true)); !errors.Is(err, ErrNewerFormat) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("an intact version %d: %v; want ErrNewerFormat only", version+1, err)
	}
	if err := read(withVersion(version+1, false)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("version %d with a bad checksum: %v; want ErrCorrupt", version+1, err)
	}
}
