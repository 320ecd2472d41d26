package logfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
)

// CopyTruncate rotates path while a process keeps it open for appending
// (logrotate's copytruncate): the content is copied to path.1 (older
// backups shift up) and path is truncated in place, so the writer never
// blocks and needs no reopen. Bytes appended between the last copy pass and
// the truncation — a window of microseconds — can be lost. Like
// RotateIfOver it touches only files in the ledger.
func CopyTruncate(path string, maxSize int64, backups int, ledger Ledger) (rotated bool, err error) {
	if over, err := overSize(path, maxSize); !over || err != nil {
		return false, err
	}
	if truncated, err := makeRoom(path, backups, ledger); truncated || err != nil {
		return truncated, err
	}
	src, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer func() { _ = src.Close() }() // read-only
	dst, err := os.OpenFile(path+".1", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return false, fmt.Errorf("rotate %s: %w", path, err)
	}
	if err := ledger.add(path + ".1"); err != nil {
		_ = dst.Close() // the ledger error is the one to report
		return false, err
	}
	for { // copy until a pass finds nothing new, then truncate at once
		n, err := io.Copy(dst, src)
		if err != nil {
			_ = dst.Close() // the copy error is the one to report
			return false, fmt.Errorf("rotate %s: %w", path, err)
		}
		if n == 0 {
			break
		}
	}
	// The copy must be whole before the original is emptied.
	if err := dst.Close(); err != nil {
		return false, fmt.Errorf("rotate %s: %w", path, err)
	}
	return true, os.Truncate(path, 0)
}

// mustOwnAll checks path and its backups against the ledger.
func mustOwnAll(path string, backups int, ledger Ledger) error {
	for i := 0; i <= backups; i++ {
		p := path
		if i > 0 {
			p = fmt.Sprintf("%s.%d", path, i)
		}
		if err := ledger.mustOwn(p); err != nil {
			return fmt.Errorf("rotate: %w", err)
		}
	}
	return nil
}

// shift drops path.backups and renames path.i to path.i+1.
func shift(path string, backups int) error {
	if err := os.Remove(fmt.Sprintf("%s.%d", path, backups)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("rotate %s: %w", path, err)
	}
	for i := backups - 1; i >= 1; i-- {
		err := os.Rename(fmt.Sprintf("%s.%d", path, i), fmt.Sprintf("%s.%d", path, i+1))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("rotate %s: %w", path, err)
		}
	}
	return nil
}

// Stamper copies a process's output from r to the log at path, one line at
// a time, each line prefixed with its arrival time (RFC 3339, UTC,
// milliseconds), rotating the log by size between lines (rename and
// reopen: nothing is lost). It returns when r reaches EOF.
func Stamper(r io.Reader, path string, maxSize int64, backups int, ledger Ledger, now func() time.Time) error {
	f, err := OpenAppend(path, ledger)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // unbuffered: every write was checked as it was made
	size := int64(0)
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	br := bufio.NewReaderSize(r, 64<<10)
	lineStart := true
	checked := now()
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 && lineStart && now().Sub(checked) >= time.Second {
			// Renamed away by an external logrotate: write to the new file.
			checked = now()
			if moved(f, path) {
				if nf, oerr := OpenAppend(path, ledger); oerr == nil {
					_ = f.Close() // the file rotated away; every write to it was checked
					f, size = nf, 0
				}
			}
		}
		if len(chunk) > 0 {
			if lineStart && maxSize > 0 && size > maxSize {
				if _, rerr := RotateIfOver(path, maxSize, backups, ledger); rerr == nil {
					_ = f.Close() // the file rotated away; every write to it was checked
					if f, err = OpenAppend(path, ledger); err != nil {
						return err
					}
					size = 0
				}
			}
			var out []byte
			if lineStart {
				out = now().UTC().AppendFormat(out, "2006-01-02T15:04:05.000Z07:00 ")
			}
			out = append(out, chunk...)
			n, werr := f.Write(out)
			size += int64(n)
			if werr != nil {
				return werr
			}
			lineStart = chunk[len(chunk)-1] == '\n'
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// moved reports whether path no longer names the open file f.
func moved(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err != nil || !os.SameFile(a, b)
}
