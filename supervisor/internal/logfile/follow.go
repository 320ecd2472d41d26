package logfile

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
	"time"
)

// FollowInterval is how often Follow looks for new data.
const FollowInterval = 100 * time.Millisecond

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
	t := time.NewTicker(FollowInterval)
	defer t.Stop()
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
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
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
