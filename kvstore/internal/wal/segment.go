package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/devkit-go/devkit/kvstore/internal/vfs"
)

// A segment file starts with a header, then holds records back to back. It
// is named after the sequence number of its first record, so the covered
// range of every segment is known from the directory listing alone.
//
// Header layout: magic "DKVWAL\r\n", version u32, first seq u64, crc32c u32.
const (
	HeaderSize = 8 + 4 + 8 + 4
	Version    = 1
	magic      = "DKVWAL\r\n"
	suffix     = ".wal"
)

// ErrBadHeader reports a segment whose header is missing or damaged.
var ErrBadHeader = errors.New("wal: bad segment header")

// SegmentName is the file name of the segment whose first record is seq.
func SegmentName(firstSeq uint64) string { return fmt.Sprintf("%020d%s", firstSeq, suffix) }

// SegmentInfo is one segment file found in a directory.
type SegmentInfo struct {
	Path     string
	FirstSeq uint64
	Size     int64 // as listed
}

// ListSegments returns the segments of dir in log order.
func ListSegments(fs vfs.FS, dir string) ([]SegmentInfo, error) {
	entries, err := fs.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var segs []SegmentInfo
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, suffix) {
			continue
		}
		seq, err := strconv.ParseUint(strings.TrimSuffix(name, suffix), 10, 64)
		if err != nil {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, err
		}
		segs = append(segs, SegmentInfo{Path: filepath.Join(dir, name), FirstSeq: seq, Size: info.Size()})
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].FirstSeq < segs[j].FirstSeq })
	return segs, nil
}

// AppendHeader appends a segment header for firstSeq to dst.
func AppendHeader(dst []byte, firstSeq uint64) []byte {
	start := len(dst)
	dst = append(dst, magic...)
	dst = binary.LittleEndian.AppendUint32(dst, Version)
	dst = binary.LittleEndian.AppendUint64(dst, firstSeq)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// DecodeHeader checks a segment header and returns its first sequence number.
func DecodeHeader(b []byte) (uint64, error) {
	if len(b) < HeaderSize {
		return 0, fmt.Errorf("%w: %d of %d bytes", ErrBadHeader, len(b), HeaderSize)
	}
	if string(b[:8]) != magic {
		return 0, fmt.Errorf("%w: not a devkit log segment", ErrBadHeader)
	}
	if crc32.Checksum(b[:20], castagnoli) != binary.LittleEndian.Uint32(b[20:24]) {
		return 0, fmt.Errorf("%w: checksum mismatch", ErrBadHeader)
	}
	if v := binary.LittleEndian.Uint32(b[8:12]); v != Version {
		return 0, fmt.Errorf("%w: version %d, this build reads version %d", ErrBadHeader, v, Version)
	}
	return binary.LittleEndian.Uint64(b[12:20]), nil
}

// Writer appends to one segment file. It does no buffering of its own:
// Write hands bytes straight to the OS.
type Writer struct {
	f        vfs.File
	path     string
	firstSeq uint64
	size     int64
}

// CreateSegment creates the segment for firstSeq in dir and writes its
// header. When syncDir is set the header and the directory entry are made
// durable before it returns.
func CreateSegment(fs vfs.FS, dir string, firstSeq uint64, syncDir bool) (*Writer, error) {
	path := filepath.Join(dir, SegmentName(firstSeq))
	f, err := fs.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	w := &Writer{f: f, path: path, firstSeq: firstSeq}
	if _, err := w.Write(AppendHeader(nil, firstSeq)); err != nil {
		f.Close()
		return nil, err
	}
	if syncDir {
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, err
		}
		if err := fs.SyncDir(dir); err != nil {
			f.Close()
			return nil, err
		}
	}
	return w, nil
}

// OpenSegmentForAppend reopens an existing segment whose valid content ends
// at size, cutting off anything after it first: a new record is never
// written behind garbage.
func OpenSegmentForAppend(fs vfs.FS, path string, firstSeq uint64, size int64) (*Writer, error) {
	f, err := fs.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if fi.Size() != size {
		if err := f.Truncate(size); err != nil {
			f.Close()
			return nil, err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, err
		}
	}
	return &Writer{f: f, path: path, firstSeq: firstSeq, size: size}, nil
}

// Write appends b with a single write system call (the OS may split it, the
// file's append offset keeps it contiguous).
func (w *Writer) Write(b []byte) (int, error) {
	n, err := w.f.Write(b)
	w.size += int64(n)
	return n, err
}

// Rollback cuts the segment back to size after a failed write, so the log
// ends at its last good record.
func (w *Writer) Rollback(size int64) error {
	if err := w.f.Truncate(size); err != nil {
		return err
	}
	w.size = size
	return nil
}

// Sync makes everything written so far durable.
func (w *Writer) Sync() error { return w.f.Sync() }

// Close closes the file without syncing.
func (w *Writer) Close() error { return w.f.Close() }

// Size is the segment's length in bytes, header included.
func (w *Writer) Size() int64 { return w.size }

// Path is the segment's file path.
func (w *Writer) Path() string { return w.path }

// FirstSeq is the sequence number the segment starts at.
func (w *Writer) FirstSeq() uint64 { return w.firstSeq }
