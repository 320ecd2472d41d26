package supervisor

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/devkit-go/devkit/supervisor/internal/proc"
)

// WatchDebounce is how long the watched files must stay unchanged after a
// change before the process is restarted: an editor's save or a build
// writes several files, and they make one restart.
const WatchDebounce = 300 * time.Millisecond

// watchFiles watches the process's watch: paths (directories with every
// directory under them) while id runs; once they changed and then stayed
// unchanged for WatchDebounce, it ends the process as health does. The
// returned stop ends the watch once the process has exited, and reports
// whether the watch ended it.
func (m *monitor) watchFiles(id proc.Identity) func() bool {
	if len(m.spec.Watch) == 0 {
		return func() bool { return false }
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		m.logger.Warn("watch: cannot watch files; changes will not restart the process", "err", err)
		return func() bool { return false }
	}
	add := func(root string) {
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				m.logger.Warn("watch", "path", path, "err", err)
				return nil
			}
			if d.IsDir() || path == root {
				if err := w.Add(path); err != nil {
					m.logger.Warn("watch", "path", path, "err", err)
				}
			}
			return nil
		})
	}
	for _, p := range m.spec.Watch {
		add(p)
	}
	var fired atomic.Bool
	exited := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		timer := time.NewTimer(time.Hour)
		timer.Stop()
		for {
			select {
			case <-exited:
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if ev.Has(fsnotify.Create) {
					if fi, err := os.Stat(ev.Name); err == nil && fi.IsDir() {
						add(ev.Name) // a new directory under a watched one
					}
				}
				if ev.Op == fsnotify.Chmod {
					continue // atime and mode changes are not edits
				}
				timer.Reset(WatchDebounce)
			case err, ok := <-w.Errors:
				if ok {
					m.logger.Warn("watch", "err", err)
				}
			case <-timer.C:
				m.logger.Info("watched files changed; restarting", "pid", id.PID)
				fired.Store(true)
				m.end(id, exited)
				return
			}
		}
	}()
	return func() bool {
		close(exited)
		<-stopped
		_ = w.Close() // the watch is over
		return fired.Load()
	}
}
