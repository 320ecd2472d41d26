package logfile

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"time"
)

// stampLayout is the time prefix Capture writes when stamping lines.
const stampLayout = "2006-01-02T15:04:05.000Z07:00"

// Filter selects the lines of a log to show. The zero Filter selects all.
type Filter struct {
	// Since keeps the lines stamped at or after it (log_timestamps), and
	// the unstamped lines that follow a kept one; zero keeps all.
	Since time.Time
	// Grep keeps the lines it matches; nil keeps all.
	Grep *regexp.Regexp
}

// stampOf returns the time a stamped line was written, if it has a stamp.
func stampOf(line []byte) (time.Time, bool) {
	end := bytes.IndexByte(line[:min(len(line), len(stampLayout)+1)], ' ')
	if end < 0 {
		return time.Time{}, false
	}
	t, err := time.Parse(stampLayout, string(line[:end]))
	return t, err == nil
}

// HasStamps reports whether the log at path starts its last line with a
// time stamp (log_timestamps): what Since needs to select by time.
func HasStamps(path string) bool {
	data, err := Tail(path, 1)
	if err != nil {
		return false
	}
	_, ok := stampOf(data)
	return ok
}

// backupPath is path's i-th backup (path itself for 0).
func backupPath(path string, i int) string {
	if i == 0 {
		return path
	}
	return fmt.Sprintf("%s.%d", path, i)
}

// TailFiles returns the last n lines of the log at path that pass filt,
// oldest first, reading backwards from the end and on through the
// backups (path.1, path.2, ...) while fewer have been found. Only the
// first limit bytes of path are read (all when limit < 0). An unfinished
// last line is returned without a newline.
func TailFiles(path string, n int, limit int64, filt Filter) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	return TailOpen(path, f, n, limit, filt)
}

// TailOpen is TailFiles with the live log already open as live: its
// backups are those older than live, wherever a rotation since moved it.
func TailOpen(path string, live *os.File, n int, limit int64, filt Filter) ([]byte, error) {
	if n <= 0 {
		return nil, nil
	}
	type tline struct {
		b  []byte
		nl bool
	}
	var lines []tline   // newest first
	var pending []tline // unstamped lines waiting for the stamped line they follow
	done := false
	take := func(b []byte, nl bool) bool {
		line := tline{slices.Clone(b), nl}
		if !filt.Since.IsZero() {
			t, ok := stampOf(line.b)
			if !ok {
				pending = append(pending, line)
				return true
			}
			if t.Before(filt.Since) {
				done = true // older still, line after line
				return false
			}
			pending = append(pending, line)
			for _, l := range pending {
				if (filt.Grep == nil || filt.Grep.Match(l.b)) && len(lines) < n {
					lines = append(lines, l)
				}
			}
			pending = pending[:0]
		} else if filt.Grep == nil || filt.Grep.Match(line.b) {
			lines = append(lines, line)
		}
		done = len(lines) >= n
		return !done
	}
	end := limit
	if end < 0 {
		fi, err := live.Stat()
		if err != nil {
			return nil, err
		}
		end = fi.Size()
	}
	if err := backward(live, end, take); err != nil {
		return nil, err
	}
	for i := olderThan(path, live); !done; i++ {
		f, err := os.Open(backupPath(path, i))
		if err != nil {
			if os.IsNotExist(err) {
				break
			}
			return nil, err
		}
		fi, err := f.Stat()
		if err == nil {
			err = backward(f, fi.Size(), take)
		}
		_ = f.Close() // read-only
		if err != nil {
			return nil, err
		}
	}
	var out []byte
	for i := len(lines) - 1; i >= 0; i-- {
		out = append(out, lines[i].b...)
		if lines[i].nl {
			out = append(out, '\n')
		}
	}
	return out, nil
}

// olderThan returns the number of the first backup of path older than
// live: 1 while live is still the live log, k+1 once rotations have made
// it path.k.
func olderThan(path string, live *os.File) int {
	fi, err := live.Stat()
	if err != nil {
		return 1
	}
	for i := 1; ; i++ {
		bi, err := os.Stat(backupPath(path, i))
		if err != nil {
			return 1
		}
		if os.SameFile(fi, bi) {
			return i + 1
		}
	}
}

// backward calls fn with each line of f's first end bytes, the last
// first, without its newline (nl says whether it had one), until fn
// returns false. It reads in chunks from the end, so a large file costs
// only what is read.
func backward(f io.ReaderAt, end int64, fn func(line []byte, nl bool) bool) error {
	if end <= 0 {
		return nil
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], end-1); err != nil && err != io.EOF {
		return err
	}
	nl := last[0] == '\n'
	pos := end
	if nl {
		pos-- // the last newline ends the last line; it starts no other
	}
	var buf []byte // the unread lines' bytes, [pos, pos+len(buf))
	for {
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			if !fn(buf[i+1:], nl) {
				return nil
			}
			buf, nl = buf[:i], true
			continue
		}
		if pos == 0 {
			fn(buf, nl)
			return nil
		}
		size := min(int64(tailChunk), pos)
		pos -= size
		chunk := make([]byte, size, int(size)+len(buf))
		if _, err := f.ReadAt(chunk, pos); err != nil && err != io.EOF {
			return err
		}
		buf = append(chunk, buf...)
	}
}

// FilterWriter passes to W the whole lines written to it that pass the
// filter; a partial line waits for its end (or Flush).
type FilterWriter struct {
	W       io.Writer
	Filter  Filter
	partial []byte
	kept    bool // whether the last stamped line was kept (for Since)
	cont    bool // the first line written continues one already shown
}

func (fw *FilterWriter) Write(b []byte) (int, error) {
	data := append(fw.partial, b...)
	var out []byte
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		if fw.cont || fw.pass(data[:i]) {
			out = append(out, data[:i+1]...)
		}
		fw.cont = false
		data = data[i+1:]
	}
	fw.partial = append(fw.partial[:0:0], data...)
	if len(out) > 0 {
		if _, err := fw.W.Write(out); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

// Continue carries on from the lines shown before following (TailFiles'
// output): an unfinished last line is continued, not filtered again, and
// the time filter's state is that of the last stamped line.
func (fw *FilterWriter) Continue(shown []byte) {
	for line := range bytes.Lines(shown) {
		if _, ok := stampOf(line); ok {
			fw.kept = true // shown, so it passed
		}
	}
	if len(shown) > 0 && shown[len(shown)-1] != '\n' {
		fw.cont = true
	}
}

// Flush writes an unfinished last line that passes the filter.
func (fw *FilterWriter) Flush() error {
	line := fw.partial
	fw.partial = nil
	if len(line) == 0 || !fw.pass(line) {
		return nil
	}
	_, err := fw.W.Write(line)
	return err
}

func (fw *FilterWriter) pass(line []byte) bool {
	if !fw.Filter.Since.IsZero() {
		if t, ok := stampOf(line); ok {
			fw.kept = !t.Before(fw.Filter.Since)
		}
		if !fw.kept {
			return false
		}
	}
	return fw.Filter.Grep == nil || fw.Filter.Grep.Match(line)
}
