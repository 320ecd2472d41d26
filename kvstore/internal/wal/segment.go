package wal

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
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
//
// Version 2 is version 1 written over a preallocated file: the records are
// the same, and zeros after the last one are the segment's clean end (its
// zero tail). In a version-1 segment zeros after the last record are what a
// crash leaves when the file's new size reached the disk before its data —
// a torn tail, as always.
const (
	HeaderSize = 8 + 4 + 8 + 4
	Version    = 1
	// VersionPreallocated marks a segment that may end in zeros.
	VersionPreallocated = 2
	magic               = "DKVWAL\r\n"
	suffix              = ".wal"
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
func AppendHeader(dst []byte, firstSeq uint64) []byte { return appendHeader(dst, firstSeq, Version) }

// AppendPreallocatedHeader appends the header of a preallocated segment
// (VersionPreallocated) for firstSeq to dst.
func AppendPreallocatedHeader(dst []byte, firstSeq uint64) []byte {
	return appendHeader(dst, firstSeq, VersionPreallocated)
}

func appendHeader(dst []byte, firstSeq uint64, version uint32) []byte {
	start := len(dst)
	dst = append(dst, magic...)
	dst = binary.LittleEndian.AppendUint32(dst, version)
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
	if v := binary.LittleEndian.Uint32(b[8:12]); v != Version && v != VersionPreallocated {
		return 0, fmt.Errorf("%w: version %d, this build reads versions %d and %d", ErrBadHeader, v, Version, VersionPreallocated)
	}
	return binary.LittleEndian.Uint64(b[12:20]), nil
}

// Preallocated reports whether the header at the start of b, checked by
// DecodeHeader, is a preallocated segment's: one whose zeros after the last
// record are its clean end.
func Preallocated(b []byte) bool {
	return len(b) >= 12 && binary.LittleEndian.Uint32(b[8:12]) == VersionPreallocated
}

// Writer writes one segment file at its data end. It does no buffering of
// its own: Write hands bytes straight to the OS.
//
// A segment may be preallocated: zero bytes, written and synced before any
// record, fill it beyond its data end (the zero tail). Records are then
// written over those zeros in place, so a sync changes no file size and the
// file system has no metadata to commit. Recovery reads zeros after the last
// record as the clean end of the log.
type Writer struct {
	f        vfs.File
	path     string
	firstSeq uint64
	size     int64 // the data end: header and records
	extent   int64 // the file's length: size, or more with a zero tail
}

// CreateSegment creates the segment for firstSeq in dir and writes its
// header. When syncDir is set the header and the directory entry are made
// durable before it returns. The segment has no zero tail: records extend it.
func CreateSegment(fs vfs.FS, dir string, firstSeq uint64, syncDir bool) (*Writer, error) {
	path := filepath.Join(dir, SegmentName(firstSeq))
	f, err := fs.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
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
// at size. Anything after it is cut off first — a new record is never
// written behind garbage — unless zeroTail says recovery found only zeros
// there: then the segment keeps its zero tail and records go on over it.
func OpenSegmentForAppend(fs vfs.FS, path string, firstSeq uint64, size int64, zeroTail bool) (*Writer, error) {
	f, err := fs.OpenFile(path, os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	extent := fi.Size()
	if extent < size || (extent > size && !zeroTail) {
		if err := f.Truncate(size); err != nil {
			f.Close()
			return nil, err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, err
		}
		extent = size
	}
	if _, err := f.Seek(size, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return &Writer{f: f, path: path, firstSeq: firstSeq, size: size, extent: extent}, nil
}

// PrepareSegment creates the file at path (a temp name, which recovery
// deletes) holding size zero bytes, durably: written in chunks, synced every
// few of them so the page cache never holds much of it, and synced at the
// end. It stops when ctx is done. On any error the file is removed.
func PrepareSegment(ctx context.Context, fs vfs.FS, path string, size int64) (err error) {
	f, err := fs.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			if rerr := fs.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				err = fmt.Errorf("%w (and removing it failed: %w)", err, rerr)
			}
		}
	}()
	zeros := make([]byte, min(size, prepareChunk))
	var unsynced int64
	for off := int64(0); off < size; {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := f.Write(zeros[:min(int64(len(zeros)), size-off)])
		off += int64(n)
		unsynced += int64(n)
		if err != nil {
			return err
		}
		if unsynced >= prepareSyncEvery {
			if err := f.Sync(); err != nil {
				return err
			}
			unsynced = 0
		}
	}
	return f.Sync()
}

// Zero-filling a prepared segment: the size of each write, and how much is
// written between syncs.
const (
	prepareChunk     = 1 << 20
	prepareSyncEvery = 4 << 20
)

// InstallPrepared makes the prepared file at tmp (PrepareSegment) the
// segment for firstSeq in dir: it writes the header (VersionPreallocated)
// over the first zeros and
// syncs it, then renames the file to its segment name and syncs the
// directory, so the name appears only on a file that holds a valid header
// and zeros. The segment is opened again under that name, for writing after
// the header.
func InstallPrepared(fs vfs.FS, dir, tmp string, firstSeq uint64) (*Writer, error) {
	f, err := fs.OpenFile(tmp, os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	_, err = f.Write(AppendPreallocatedHeader(nil, firstSeq))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr // closed before the rename, which Windows needs
	}
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, SegmentName(firstSeq))
	if err := fs.Rename(tmp, path); err != nil {
		return nil, err
	}
	if err := fs.SyncDir(dir); err != nil {
		return nil, err
	}
	// O_CREATE: this is where the segment comes to be, as CreateSegment's
	// open (the file exists, so nothing is created).
	if f, err = fs.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644); err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		_, err = f.Seek(HeaderSize, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Writer{f: f, path: path, firstSeq: firstSeq, size: HeaderSize, extent: max(fi.Size(), HeaderSize)}, nil
}

// Write writes b at the data end with a single write system call (the OS
// may split it; the file offset keeps it contiguous).
func (w *Writer) Write(b []byte) (int, error) {
	n, err := w.f.Write(b)
	w.size += int64(n)
	w.extent = max(w.extent, w.size)
	return n, err
}

// Rollback cuts the segment back to size after a failed write, so the log
// ends at its last good record (a zero tail goes with the cut).
func (w *Writer) Rollback(size int64) error {
	if err := w.f.Truncate(size); err != nil {
		return err
	}
	w.size, w.extent = size, size
	_, err := w.f.Seek(size, io.SeekStart)
	return err
}

// TrimTail cuts a zero tail off, so the file ends at its last record:
// done before a segment stops being the newest, since only the newest may
// end in zeros. The next Sync makes the cut durable with the records
// (fdatasync commits a changed size).
func (w *Writer) TrimTail() error {
	if w.extent == w.size {
		return nil
	}
	if err := w.f.Truncate(w.size); err != nil {
		return err
	}
	w.extent = w.size
	return nil
}

// Sync makes everything written so far durable.
func (w *Writer) Sync() error { return w.f.Sync() }

// Close closes the file without syncing.
func (w *Writer) Close() error { return w.f.Close() }

// Size is the segment's data length in bytes, header included: where the
// next record goes.
func (w *Writer) Size() int64 { return w.size }

// Preallocated reports whether zeros lie beyond the data end: the next
// write goes over them in place.
func (w *Writer) Preallocated() bool { return w.extent > w.size }

// Path is the segment's file path.
func (w *Writer) Path() string { return w.path }

// FirstSeq is the sequence number the segment starts at.
func (w *Writer) FirstSeq() uint64 { return w.firstSeq }

// NonZeroEnd is the offset just past the last non-zero byte of b (0 when b
// is all zeros): where a preallocated segment's zero tail starts, and how
// much of a torn tail is not the zero tail after it.
func NonZeroEnd(b []byte) int {
	var zeros [4096]byte
	end := len(b)
	for end >= len(zeros) && bytes.Equal(b[end-len(zeros):end], zeros[:]) {
		end -= len(zeros)
	}
	for end > 0 && b[end-1] == 0 {
		end--
	}
	return end
}

// SectorSize is the unit a drive persists atomically, at the least: a power
// loss can keep some sectors of a write and lose others, in any order.
const SectorSize = 512

// ZeroSectorIn reports whether b[from:to] holds a whole SectorSize-aligned
// sector of zeros (offsets in b are file offsets). Where a record does not
// decode, in a segment written over zeros, such a sector between it and the
// next valid record marks a write cut short by a power loss with its sectors
// persisted out of order: the sector was never written. (etcd's WAL reads a
// torn entry the same way.)
func ZeroSectorIn(b []byte, from, to int) bool {
	var zeros [SectorSize]byte
	to = min(to, len(b))
	for off := (from + SectorSize - 1) / SectorSize * SectorSize; off+SectorSize <= to; off += SectorSize {
		if bytes.Equal(b[off:off+SectorSize], zeros[:]) {
			return true
		}
	}
	return false
}
