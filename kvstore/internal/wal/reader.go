package wal

import (
	"encoding/binary"
	"io"
	"os"

	"github.com/devkit-go/devkit/kvstore/internal/vfs"
)

// ReadSegment reads a whole segment file into buf (grown when too small)
// and returns it. Records decoded from the result alias it; lengths are
// checked against its length, so a lying length field never makes the
// reader allocate more than the file holds.
func ReadSegment(fs vfs.FS, path string, buf []byte) ([]byte, error) {
	f, err := fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if int64(cap(buf)) < fi.Size() {
		buf = make([]byte, fi.Size())
	}
	buf = buf[:fi.Size()]
	if _, err := io.ReadFull(f, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// ValidRecordAfter reports whether any valid record with a sequence number
// after lastSeq starts beyond offset from in buf. It is how a torn tail
// (nothing valid follows the damage) is told from mid-log corruption (good
// records follow it). Candidates are filtered on the sequence field before
// a checksum is computed, so a long garbage tail is scanned quickly, and
// the zero tail of a preallocated segment is not scanned at all: a record's
// header holds its sequence number, never zero, so none starts past the
// last non-zero byte.
func ValidRecordAfter(buf []byte, from int, lastSeq uint64, maxPayload int) (int, bool) {
	// Any record after the damage must carry a sequence number in
	// (lastSeq, lastSeq+records that could fit].
	maxSeq := lastSeq + uint64(len(buf)/RecordHeaderSize) + 1
	last := NonZeroEnd(buf)
	for off := from + 1; off < last && off+RecordHeaderSize <= len(buf); off++ {
		seq := binary.LittleEndian.Uint64(buf[off+9 : off+17])
		if seq <= lastSeq || seq > maxSeq {
			continue
		}
		if _, _, err := DecodeRecord(buf[off:], maxPayload); err == nil {
			return off, true
		}
	}
	return 0, false
}
