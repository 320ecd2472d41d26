package logfile

import (
	"bytes"
	"io"
	"os"
)

// tailChunk is how much Tail reads at a time, backwards from the end.
const tailChunk = 8 << 10

// Tail returns the last n lines of the file at path, reading backwards
// from the end in chunks so a large log costs only what is shown.
func Tail(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	return tailOf(f, n)
}

func tailOf(f *os.File, n int) ([]byte, error) {
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil || n <= 0 || end == 0 {
		return nil, err
	}
	var buf []byte
	pos := end
	for pos > 0 {
		size := min(int64(tailChunk), pos)
		pos -= size
		chunk := make([]byte, size)
		if _, err := f.ReadAt(chunk, pos); err != nil && err != io.EOF {
			return nil, err
		}
		buf = append(chunk, buf...)
		// A trailing newline ends the last line; it does not start another.
		if bytes.Count(bytes.TrimSuffix(buf, []byte("\n")), []byte("\n")) >= n {
			break
		}
	}
	trimmed := bytes.TrimSuffix(buf, []byte("\n"))
	for i, count := len(trimmed)-1, 0; i >= 0; i-- {
		if trimmed[i] == '\n' {
			count++
			if count == n {
				return buf[i+1:], nil
			}
		}
	}
	return buf, nil
}

// tailSinceCap bounds how much TailSince reads.
const tailSinceCap = 256 << 10

// TailSince returns the last n lines written at or after offset: what one
// run of a process wrote, without the lines of earlier runs. A file now
// shorter than offset (rotated or truncated since) is read from its start.
func TailSince(path string, offset int64, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() < offset {
		offset = 0
	}
	start := max(offset, fi.Size()-tailSinceCap)
	buf := make([]byte, fi.Size()-start)
	if _, err := f.ReadAt(buf, start); err != nil && err != io.EOF {
		return nil, err
	}
	trimmed := bytes.TrimSuffix(buf, []byte("\n"))
	for i, count := len(trimmed)-1, 0; i >= 0; i-- {
		if trimmed[i] == '\n' {
			if count++; count == n {
				return buf[i+1:], nil
			}
		}
	}
	return buf, nil
}
