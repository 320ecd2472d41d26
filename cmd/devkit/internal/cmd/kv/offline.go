package kv

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The offline tools (verify, repair) work on a data directory no server
// holds. verify never changes it: it checks a copy. repair copies it aside
// before it cuts anything.

// lockFile is the engine's lock file, which the copies leave out.
const lockFile = "LOCK"

// copyDir copies the regular files under src to dst (created), leaving out
// the lock file; progress, when set, is told the bytes copied so far.
func copyDir(src, dst string, progress func(copied int64)) error {
	var copied int64
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if d.Name() == lockFile || !d.Type().IsRegular() {
			return nil
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		w := io.Writer(out)
		if progress != nil {
			w = progressWriter{w: out, n: &copied, report: progress}
		}
		if _, err := io.Copy(w, in); err != nil {
			out.Close()
			return fmt.Errorf("copy %s: %w", path, err)
		}
		if err := out.Sync(); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

type progressWriter struct {
	w      io.Writer
	n      *int64
	report func(int64)
}

func (p progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	*p.n += int64(n)
	p.report(*p.n)
	return n, err
}

// progressBar draws "label [====    ] 42%" on w, at most every 100ms.
type progressBar struct {
	w     io.Writer
	label string
	total int64
	last  time.Time
}

func (b *progressBar) update(done int64) {
	if b == nil || b.total <= 0 || (time.Since(b.last) < 100*time.Millisecond && done < b.total) {
		return
	}
	b.last = time.Now()
	const width = 30
	frac := min(float64(done)/float64(b.total), 1)
	n := int(frac * width)
	fmt.Fprintf(b.w, "\r%s [%s%s] %3.0f%%\033[K", b.label, strings.Repeat("=", n), strings.Repeat(" ", width-n), frac*100)
}

func (b *progressBar) clear() {
	if b != nil {
		fmt.Fprint(b.w, "\r\033[K")
	}
}
