package logfile

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"time"
)

// FollowInterval is how often Follow looks for new data.
const FollowInterval = 100 * time.Millisecond

// Follow copies what is appended to path to w, starting at offset, until
// ctx ends. A file that shrinks (truncated) is read again from its start; a
// file replaced by another (rotated) is drained and the new one followed
// from its start; a path that disappears is waited for.
func Follow(ctx context.Context, w io.Writer, path string, offset int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { f.Close() }()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return err
	}
	pos := offset
	t := time.NewTicker(FollowInterval)
	defer t.Stop()
	for {
		n, err := io.Copy(w, f)
		pos += n
		if err != nil {
			return err
		}
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		if fi.Size() < pos { // truncated in place
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return err
			}
			pos = 0
			continue
		}
		if cur, err := os.Stat(path); err == nil && !os.SameFile(fi, cur) { // rotated
			if n, err := io.Copy(w, f); err != nil || n > 0 {
				if err != nil {
					return err
				}
				continue // drain fully before switching
			}
			next, err := os.Open(path)
			if err == nil {
				f.Close()
				f, pos = next, 0
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
