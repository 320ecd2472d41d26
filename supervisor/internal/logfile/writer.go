package logfile

// Invariant: every byte read from the process's output is written to the
// log (unless the write itself fails: then it is dropped and reported),
// and the log is rotated only between writes, by rename and reopen: a
// rotation loses nothing and the live file never holds more than MaxSize
// plus one line (or lineSlack, for output without newlines).

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// lineSlack is how far past MaxSize a line without a newline may grow
// before the log is rotated in the middle of it.
const lineSlack = 64 << 10

// CaptureOptions say how Capture writes a process's output.
type CaptureOptions struct {
	MaxSize int64 // rotate when the live log is larger; <= 0: never
	Backups int   // old files kept (path.1 the newest); 0: truncate instead
	Ledger  Ledger
	// Stamp prefixes each line with its arrival time (RFC 3339, UTC,
	// milliseconds).
	Stamp bool
	Now   func() time.Time // time.Now when nil
	// Rotated, when set, is called after every rotation attempt with its
	// error (nil on success), and when writing to the log fails or works
	// again, so a failure can be made visible.
	Rotated func(error)
}

// Capture copies a process's output from r to the log at path, rotating
// it by size between lines (rename and reopen: nothing is lost, and the
// limit holds whatever the write rate, as the writer waits for the copy).
// A log renamed away by an external logrotate is noticed within a second
// and the new file written to. It returns when r reaches EOF.
func Capture(r io.Reader, path string, opt CaptureOptions) error {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	f, err := OpenAppend(path, opt.Ledger)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // unbuffered: every write was checked as it was made
	size := int64(0)
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	reopen := func() error {
		_ = f.Close() // the file rotated away; every write to it was checked
		nf, err := OpenAppend(path, opt.Ledger)
		if err != nil {
			return err
		}
		f, size = nf, 0
		return nil
	}
	br := bufio.NewReaderSize(r, 64<<10)
	lineStart := true
	checked := opt.Now()
	var failedAt time.Time // a failed rotation is retried once a second, not at every line
	failing := false       // the last write failed
	var out []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 && lineStart && opt.Now().Sub(checked) >= time.Second {
			checked = opt.Now()
			if moved(f, path) {
				if rerr := reopen(); rerr != nil {
					return rerr
				}
			}
		}
		if len(chunk) > 0 {
			over := opt.MaxSize > 0 && (lineStart && size > opt.MaxSize || size > opt.MaxSize+lineSlack)
			if over && opt.Now().Sub(failedAt) >= time.Second {
				_, rerr := RotateIfOver(path, opt.MaxSize, opt.Backups, opt.Ledger)
				failedAt = time.Time{}
				if rerr != nil {
					failedAt = opt.Now()
				}
				if opt.Rotated != nil {
					opt.Rotated(rerr)
				}
				if rerr == nil {
					if err := reopen(); err != nil {
						return err
					}
				}
			}
			out = out[:0]
			if lineStart && opt.Stamp {
				out = opt.Now().UTC().AppendFormat(out, "2006-01-02T15:04:05.000Z07:00 ")
			}
			out = append(out, chunk...)
			if !opt.Stamp && err == nil {
				out = append(out, wholeLines(br, opt.MaxSize-size-int64(len(out)), opt.MaxSize > 0)...)
			}
			n, werr := f.Write(out)
			size += int64(n)
			switch {
			case werr != nil:
				// A full disk or a read-only file system: the output is
				// dropped (the process must not block on a log it cannot
				// have) and the failure reported, until writes work again.
				failing = true
				if opt.Rotated != nil {
					opt.Rotated(fmt.Errorf("output dropped: %w", werr))
				}
			case failing:
				failing = false
				if opt.Rotated != nil {
					opt.Rotated(nil)
				}
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

// wholeLines takes from br the whole lines already buffered — at most
// room bytes of them when bounded — so that a fast writer's lines cost one
// write, not one each, and rotation still falls between lines.
func wholeLines(br *bufio.Reader, room int64, bounded bool) []byte {
	buffered, _ := br.Peek(br.Buffered()) // no read: only what is buffered
	if bounded {
		buffered = buffered[:max(0, min(int64(len(buffered)), room))]
	}
	i := bytes.LastIndexByte(buffered, '\n')
	if i < 0 {
		return nil
	}
	lines := buffered[:i+1]
	_, _ = br.Discard(len(lines)) // buffered: cannot fail
	return lines
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
