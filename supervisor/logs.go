package supervisor

import (
	"context"
	"io"
	"os"

	"github.com/devkit-go/devkit/supervisor/internal/logfile"
)

// TailLog writes the last n lines of name's log to w, reading from the end
// of the file rather than through all of it.
func (s *Supervisor) TailLog(name string, n int, w io.Writer) error {
	path, err := s.LogPath(name)
	if err != nil {
		return err
	}
	data, err := logfile.Tail(path, n)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// FollowLog writes the last n lines of name's log to w, then everything
// appended until ctx ends, across truncation and rotation.
func (s *Supervisor) FollowLog(ctx context.Context, name string, n int, w io.Writer) error {
	path, err := s.LogPath(name)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	end, err := f.Seek(0, io.SeekEnd)
	f.Close()
	if err != nil {
		return err
	}
	// Tail up to the size measured above, then follow from there, so no
	// line is shown twice or skipped.
	data, err := logfile.Tail(path, n)
	if err != nil {
		return err
	}
	if int64(len(data)) > end {
		data = data[:end]
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	return logfile.Follow(ctx, w, path, end)
}
