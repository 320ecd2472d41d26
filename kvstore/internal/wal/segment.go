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
	"runtime/debug"
	"sort"
	"strconv"
	"strings"

	"github.com/devkit-go/devkit/kvstore/internal/vfs"
)

// A segment file starts with a header, then holds records back to back. It
// is named after the sequence number of its first record, so the covered
// range of every segment is known from the directory listing alone.
//
// Header layout: magic "DKVWAL\r\n", version u32, first seq u64, crc32c u32;
// from version 3 on, a format record follows (see below).
//
// Versions: 1 plain; 2 is version 1 written over a preallocated file (zeros
// after the last record are the segment's clean end, its zero tail; in a
// version-1 segment such zeros are what a crash leaves when the file's new
// size reached the disk before its data — a torn tail). Versions 3 and 4 are
// 1 and 2 with the collection ops (batch op types 6..8) allowed: a build that
// reads only versions 1 and 2 must refuse them, never read a delta op as a
// torn tail and cut it.
//
// The format record of a version 3+ header is a delete record (type 2) with
// sequence number firstSeq whose key names the format and the writer. It is
// part of the header, never applied. It is there for readers of versions 1
// and 2: they take a segment whose header they refuse and in which no record
// decodes for the remains of a crash during its creation, and remove it; a
// record they can decode makes them refuse the directory instead.
const (
	// HeaderSize is the fixed part of every header (versions 1 and 2: all of it).
	HeaderSize = 8 + 4 + 8 + 4
	// VersionPlain and VersionPreallocated are the formats before
	// collections: still read, never written.
	VersionPlain        = 1
	VersionPreallocated = 2
	// Version is the format this build writes, and VersionPreallocatedColl
	// its preallocated form: the records may hold collection ops.
	Version                 = 3
	VersionPreallocatedColl = 4
	// NewestVersion is the newest format this build reads.
	NewestVersion = VersionPreallocatedColl
	magic         = "DKVWAL\r\n"
	suffix        = ".wal"
)

// ErrBadHeader reports a segment whose header is missing or damaged.
var ErrBadHeader = errors.New("wal: bad segment header")

// ErrNewerFormat reports a segment whose intact header names a format newer
// than this build reads: written by a newer devkit. It is never damage.
var ErrNewerFormat = errors.New("wal: segment written in a newer log format")

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
// (VersionPreallocatedColl) for firstSeq to dst.
func AppendPreallocatedHeader(dst []byte, firstSeq uint64) []byte {
	return appendHeader(dst, firstSeq, VersionPreallocatedColl)
}

func appendHeader(dst []byte, firstSeq uint64, version uint32) []byte {
	start := len(dst)
	dst = append(dst, magic...)
	dst = binary.LittleEndian.AppendUint32(dst, version)
	dst = binary.LittleEndian.AppendUint64(dst, firstSeq)
	dst = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
	if version < Version {
		return dst // written by tests only: the formats before collections
	}
	return AppendRecord(dst, Record{Type: TypeDelete, Seq: firstSeq, Key: []byte(formatNote(version))})
}

// formatNote is the key of the format record: the format and the writer.
func formatNote(version uint32) string {
	return fmt.Sprintf("devkit log format %d, written by kvstore %s", version, moduleVersion())
}

// moduleVersion is the kvstore module's version in this binary's build
// information ("devel" when it has none, as in tests).
func moduleVersion() string {
	const path = "github.com/devkit-go/devkit/kvstore"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Path == path && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			return bi.Main.Version
		}
		for _, d := range bi.Deps {
			if d.Path == path && d.Version != "" && d.Version != "(devel)" {
				return d.Version
			}
		}
	}
	return "devel"
}

// Header is a decoded segment header.
type Header struct {
	FirstSeq uint64
	Version  uint32
	// Size is the header's length: where the first record starts.
	Size int
	// Writer is the format record's note ("" before version 3).
	Writer string
}

// Preallocated reports whether the segment may end in a zero tail.
func (h Header) Preallocated() bool {
	return h.Version == VersionPreallocated || h.Version == VersionPreallocatedColl
}

// Preallocated reports whether the header at the start of b, checked by
// DecodeHeader, is a preallocated segment's: one whose zeros after the last
// record are its clean end.
func Preallocated(b []byte) bool {
	return len(b) >= 12 && Header{Version: binary.LittleEndian.Uint32(b[8:12])}.Preallocated()
}

// DecodeHeader checks the header at the start of b.
func DecodeHeader(b []byte) (Header, error) { return decodeHeader(b, NewestVersion) }

// decodeHeader is DecodeHeader for a reader whose newest format is newest:
// tests play a reader of the formats before collections with it.
func decodeHeader(b []byte, newest uint32) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: %d of %d bytes", ErrBadHeader, len(b), HeaderSize)
	}
	if string(b[:8]) != magic {
		return Header{}, fmt.Errorf("%w: not a devkit log segment", ErrBadHeader)
	}
	if crc32.Checksum(b[:20], castagnoli) != binary.LittleEndian.Uint32(b[20:24]) {
		return Header{}, fmt.Errorf("%w: checksum mismatch", ErrBadHeader)
	}
	h := Header{FirstSeq: binary.LittleEndian.Uint64(b[12:20]), Version: binary.LittleEndian.Uint32(b[8:12]), Size: HeaderSize}
	if err := checkVersion(h.Version, newest, b); err != nil {
		return Header{}, err
	}
	if h.Version < Version {
		return h, nil
	}
	rec, n, err := DecodeRecord(b[HeaderSize:], 1<<10)
	if err != nil || rec.Type != TypeDelete || rec.Seq != h.FirstSeq {
		return Header{}, fmt.Errorf("%w: version %d without its format record", ErrBadHeader, h.Version)
	}
	h.Size += n
	h.Writer = string(rec.Key)
	return h, nil
}

// checkVersion refuses a version this reader does not know. A version past
// newest in an intact header was written by a newer build: the error says
// which, when the format record says so, and what to do.
func checkVersion(v, newest uint32, b []byte) error {
	if v >= VersionPlain && v <= newest {
		return nil
	}
	if v == 0 {
		return fmt.Errorf("%w: version 0", ErrBadHeader)
	}
	writer := "a newer devkit"
	if rec, _, err := DecodeRecord(b[HeaderSize:], 1<<10); err == nil && rec.Type == TypeDelete {
		writer = fmt.Sprintf("%q", rec.Key)
	}
	return fmt.Errorf("%w: format %d, written by %s; this build reads formats 1 to %d: "+
		"run the devkit that wrote it, or a newer one, on this data directory", ErrNewerFormat, v, writer, newest)
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
	// headerSize is where the records start.
	headerSize int64
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
	header := AppendHeader(nil, firstSeq)
	w.headerSize = int64(len(header))
	if _, err := w.Write(header); err != nil {
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

// OpenSegmentForAppend reopens an existing segment whose header is h and
// whose valid content ends at size. Anything after it is cut off first — a new record is never
// written behind garbage — unless zeroTail says recovery found only zeros
// there: then the segment keeps its zero tail and records go on over it.
func OpenSegmentForAppend(fs vfs.FS, path string, h Header, size int64, zeroTail bool) (*Writer, error) {
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
	return &Writer{f: f, path: path, firstSeq: h.FirstSeq, size: size, extent: extent, headerSize: int64(h.Size)}, nil
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
	header := AppendPreallocatedHeader(nil, firstSeq)
	_, err = f.Write(header)
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
		_, err = f.Seek(int64(len(header)), io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	hsize := int64(len(header))
	return &Writer{f: f, path: path, firstSeq: firstSeq, size: hsize, extent: max(fi.Size(), hsize), headerSize: hsize}, nil
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

// HasRecords reports whether the segment holds a record after its header.
func (w *Writer) HasRecords() bool { return w.size > w.headerSize }

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
