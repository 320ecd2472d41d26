package logfile

// A follower looks at the log when the kernel says its directory changed
// (inotify, through fsnotify), at most every FollowInterval, and every
// FollowFallback in any case: an idle log costs no wake-ups but the slow
// one, and a busy log is read in batches as a 10 Hz poll would.

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// FollowInterval is the shortest time between two looks for new data, and
// how often Follow looks where the file system gives no change events.
const FollowInterval = 100 * time.Millisecond

// FollowFallback is how often Follow looks even without a change event:
// for events the kernel dropped, and to let go of rotated files gone quiet.
const FollowFallback = time.Second

// rotatedQuiet is how long a rotated-away file must stay unchanged before
// Follow stops reading it: a process that cannot reopen its log keeps
// writing to the renamed file, and that output is still shown.
const rotatedQuiet = 10 * time.Second

// Follow copies what is appended to path to w, starting at offset, until
// ctx ends. A file that shrinks (truncated) is read again from its start.
// A file renamed away and replaced by a new one (logrotate's default,
// rename-and-create) is followed on both sides: the new file from its start,
// and the old one for as long as something still writes to it. A path that
// disappears is waited for; so is one that does not exist yet when
// offset is negative.
func Follow(ctx context.Context, w io.Writer, path string, offset int64) error {
	t := time.NewTicker(FollowInterval)
	defer t.Stop()
	var cur *os.File
	for cur == nil {
		f, err := os.Open(path)
		switch {
		case err == nil:
			cur = f
		case offset >= 0 || !errors.Is(err, fs.ErrNotExist):
			return err
		default:
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
		}
	}
	return FollowFrom(ctx, w, path, cur, max(offset, 0))
}

// FollowFrom is Follow from offset of cur, the log at path opened by the
// caller (so that what it read before, up to offset, is exactly what
// precedes: a rotation in between cannot slip a file past). It closes cur.
func FollowFrom(ctx context.Context, w io.Writer, path string, cur *os.File, offset int64) error {
	wake := newWaker(path)
	defer wake.close()
	pos := offset
	if _, err := cur.Seek(pos, io.SeekStart); err != nil {
		_ = cur.Close() // read-only; the seek error is the one to report
		return err
	}
	type rotated struct {
		f       *os.File
		quietAt time.Time
	}
	var old []rotated
	defer func() {
		_ = cur.Close() // read-only
		for _, o := range old {
			_ = o.f.Close() // read-only
		}
	}()
	for {
		// What is still written to rotated-away files first: it is older.
		kept := old[:0]
		for _, o := range old {
			n, err := io.Copy(w, o.f)
			if err != nil {
				return err
			}
			if n > 0 {
				o.quietAt = time.Now()
			}
			if time.Since(o.quietAt) < rotatedQuiet {
				kept = append(kept, o)
			} else {
				_ = o.f.Close() // read-only
			}
		}
		old = kept
		n, err := io.Copy(w, cur)
		pos += n
		if err != nil {
			return err
		}
		fi, err := cur.Stat()
		if err != nil {
			return err
		}
		if fi.Size() < pos { // truncated in place
			if _, err := cur.Seek(0, io.SeekStart); err != nil {
				return err
			}
			pos = 0
			continue
		}
		if now, err := os.Stat(path); err == nil && !os.SameFile(fi, now) { // rotated
			next, err := os.Open(path)
			if err == nil {
				old = append(old, rotated{f: cur, quietAt: time.Now()})
				// Rotated more than once since the last look: the files
				// between cur and next are backups now, newest at path.1.
				for _, f := range between(path, fi, next) {
					old = append(old, rotated{f: f, quietAt: time.Now()})
				}
				cur, pos = next, 0
				continue
			}
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if !wake.wait(ctx) {
			return nil
		}
	}
}

// waker says when a follower should look at path again.
type waker struct {
	path    string
	w       *fsnotify.Watcher // nil: poll every FollowInterval
	poll    *time.Ticker
	last    time.Time // the last look
	spacing *time.Timer
}

// newWaker watches path's directory (which sees the file rotated away, its
// backups written to and a new file created); without change events it
// polls.
func newWaker(path string) *waker {
	k := &waker{path: path, last: time.Now()}
	if w, err := fsnotify.NewBufferedWatcher(64); err == nil {
		if err := w.Add(filepath.Dir(path)); err == nil {
			k.w = w
		} else {
			_ = w.Close() // nothing watched; polling instead
		}
	}
	if k.w == nil {
		k.poll = time.NewTicker(FollowInterval)
	} else {
		k.poll = time.NewTicker(FollowFallback)
		k.spacing = time.NewTimer(0)
		<-k.spacing.C
	}
	return k
}

func (k *waker) close() {
	k.poll.Stop()
	if k.w != nil {
		k.spacing.Stop()
		_ = k.w.Close() // a watch only reads
	}
}

// wait returns when it is time to look again (false when ctx ended): on a
// change to path or one of its backups, but not sooner than FollowInterval
// after the last look, or on the fallback tick.
func (k *waker) wait(ctx context.Context) bool {
	defer func() { k.last = time.Now() }()
	for {
		var events chan fsnotify.Event
		var errs chan error
		if k.w != nil {
			events, errs = k.w.Events, k.w.Errors
		}
		select {
		case <-ctx.Done():
			return false
		case <-k.poll.C:
			return true
		case err, ok := <-errs:
			if !ok {
				k.w = nil // closed: the fallback tick goes on alone
				continue
			}
			_ = err // an overflow or a read error: look, as on an event
		case ev, ok := <-events:
			if !ok {
				k.w = nil
				continue
			}
			if ev.Name != k.path && !strings.HasPrefix(ev.Name, k.path+".") {
				continue // another process's log in the same directory
			}
		}
		return k.space(ctx)
	}
}

// space waits out FollowInterval since the last look, so that a busy log
// is read in batches, then drops the events that came meanwhile (the look
// reads what they announced).
func (k *waker) space(ctx context.Context) bool {
	if d := FollowInterval - time.Since(k.last); d > 0 {
		k.spacing.Reset(d)
		select {
		case <-ctx.Done():
			k.spacing.Stop()
			return false
		case <-k.spacing.C:
		}
	}
	for {
		select {
		case _, ok := <-k.w.Events:
			if !ok {
				return true
			}
		case err, ok := <-k.w.Errors:
			if !ok {
				return true
			}
			_ = err // an overflow or a read error: the look that follows reads everything
		default:
			return true
		}
	}
}

// between opens the backups of path that are newer than the file cur was
// (older than next, the new live file), oldest first: the files a follower
// that looks every FollowInterval would skip when the log rotates several
// times in between. Each is opened before it is identified, so a rotation
// meanwhile cannot slip in a file already followed; when cur is no longer
// among the backups every backup is newer.
func between(path string, cur fs.FileInfo, next *os.File) []*os.File {
	nfi, err := next.Stat()
	if err != nil {
		return nil
	}
	var newer []*os.File
	var seen []fs.FileInfo
	for i := 1; ; i++ {
		f, err := os.Open(backupPath(path, i))
		if err != nil {
			break
		}
		fi, err := f.Stat()
		if err != nil || os.SameFile(fi, cur) {
			_ = f.Close() // read-only
			break
		}
		if os.SameFile(fi, nfi) || slices.ContainsFunc(seen, func(s fs.FileInfo) bool { return os.SameFile(s, fi) }) {
			_ = f.Close() // read-only; followed already
			continue
		}
		seen = append(seen, fi)
		newer = append(newer, f)
	}
	slices.Reverse(newer)
	return newer
}
