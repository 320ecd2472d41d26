package supervisor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sync"
	"time"

	"github.com/devkit-go/devkit/supervisor/internal/logfile"
)

// LogFilter selects the lines logs show; the zero LogFilter selects all.
type LogFilter struct {
	// Since keeps the lines written at or after it; it needs the lines'
	// time stamps (log_timestamps: true).
	Since time.Time
	// Grep keeps the lines it matches.
	Grep *regexp.Regexp
}

// ErrNoTimestamps reports a time filter on a log whose lines carry no time.
var ErrNoTimestamps = errors.New("its lines carry no time; set log_timestamps: true to select them by time")

// checkFilter refuses a time filter on name's log when its lines carry
// no time stamps.
func (s *Supervisor) checkFilter(name, path string, filt LogFilter) error {
	if filt.Since.IsZero() {
		return nil
	}
	if p, ok := s.cfg.Processes[name]; ok && p.LogTimestamps {
		return nil
	}
	if logfile.HasStamps(path) {
		return nil
	}
	return fmt.Errorf("--since on %s: %w", name, ErrNoTimestamps)
}

// TailLog writes the last n lines of name's log that pass filt to w,
// reading from the end of the file, and on through its rotated backups
// when the live file holds fewer.
func (s *Supervisor) TailLog(name string, n int, filt LogFilter, w io.Writer) error {
	path, err := s.LogPath(name)
	if err != nil {
		return err
	}
	if err := s.checkFilter(name, path, filt); err != nil {
		return err
	}
	data, err := logfile.TailFiles(path, n, -1, logfile.Filter(filt))
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// FollowLog writes the last n lines of name's log that pass filt to w,
// then every such line appended until ctx ends, across truncation and
// rotation.
func (s *Supervisor) FollowLog(ctx context.Context, name string, n int, filt LogFilter, w io.Writer) error {
	path, err := s.LogPath(name)
	if err != nil {
		return err
	}
	if err := s.checkFilter(name, path, filt); err != nil {
		return err
	}
	// One open file for the tail and the follow: up to end is tailed, from
	// end followed, so no line is shown twice or skipped, whatever rotates.
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		_ = f.Close() // read-only; the seek error is the one to report
		return err
	}
	data, err := logfile.TailOpen(path, f, n, end, logfile.Filter(filt))
	if err == nil {
		_, err = w.Write(data)
	}
	if err != nil {
		_ = f.Close() // read-only; the first error is the one to report
		return err
	}
	fw := &logfile.FilterWriter{W: w, Filter: logfile.Filter(filt)}
	fw.Continue(data)
	err = logfile.FollowFrom(ctx, fw, path, f, end)
	return errors.Join(err, fw.Flush())
}

// MergedLogs writes the logs of names (every process of the project when
// names is empty) to w, each line prefixed with its process's name: first
// the last n lines of each, one process after the other, then — with
// follow — every line as it is appended, interleaved, until ctx ends (as
// docker compose logs does). A process with no log yet is waited for when
// following and skipped otherwise.
func (s *Supervisor) MergedLogs(ctx context.Context, names []string, n int, follow bool, filt LogFilter, w io.Writer) error {
	names = s.expand(names)
	if err := validNames(names); err != nil {
		return err
	}
	if len(names) == 0 {
		all, err := s.Names()
		if err != nil {
			return err
		}
		names = all
	}
	width := 0
	for _, name := range names {
		if err := s.checkKnown(name); err != nil {
			return err
		}
		width = max(width, len(name))
	}
	var mu sync.Mutex
	writers := make([]*prefixWriter, len(names))
	filters := make([]*logfile.FilterWriter, len(names))
	paths := make([]string, len(names))
	ends := make([]int64, len(names))
	opened := make([]*os.File, len(names)) // tailed up to ends[i], followed from there
	defer func() {
		for _, f := range opened {
			if f != nil {
				_ = f.Close() // read-only; FollowFrom closes those it took
			}
		}
	}()
	for i, name := range names {
		writers[i] = &prefixWriter{mu: &mu, w: w, prefix: fmt.Sprintf("%-*s | ", width, name)}
		path, err := s.LogPath(name)
		if err != nil {
			return err
		}
		paths[i] = path
		if err := s.checkFilter(name, path, filt); err != nil {
			return err
		}
		filters[i] = &logfile.FilterWriter{W: writers[i], Filter: logfile.Filter(filt)}
		ends[i] = -1 // no log yet: follow waits for it
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		opened[i] = f
		if ends[i], err = f.Seek(0, io.SeekEnd); err != nil {
			return err
		}
		data, err := logfile.TailOpen(path, f, n, ends[i], logfile.Filter(filt))
		if err != nil {
			return err
		}
		filters[i].Continue(data)
		if _, err := writers[i].Write(data); err != nil {
			return err
		}
		writers[i].flush()
	}
	if !follow {
		return nil
	}
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if f := opened[i]; f != nil {
				opened[i] = nil
				err = logfile.FollowFrom(ctx, filters[i], paths[i], f, ends[i])
			} else {
				err = logfile.Follow(ctx, filters[i], paths[i], -1)
			}
			errs[i] = errors.Join(err, filters[i].Flush())
			writers[i].flush()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// prefixWriter writes whole lines, each with its prefix, to a writer
// shared under mu; a partial line waits for its end (or flush).
type prefixWriter struct {
	mu      *sync.Mutex
	w       io.Writer
	prefix  string
	partial []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	data := append(p.partial, b...)
	var out []byte
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		out = append(out, p.prefix...)
		out = append(out, data[:i+1]...)
		data = data[i+1:]
	}
	p.partial = append([]byte(nil), data...)
	if len(out) == 0 {
		return len(b), nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.w.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

// flush writes an unfinished last line, ended with a newline.
func (p *prefixWriter) flush() {
	if len(p.partial) == 0 {
		return
	}
	line := append(append([]byte(p.prefix), p.partial...), '\n')
	p.partial = nil
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = p.w.Write(line) // best effort at the end of output
}
