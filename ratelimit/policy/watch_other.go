//go:build !linux

package policy

import (
	"context"
	"path/filepath"

	"github.com/fsnotify/fsnotify"
)

// watchFile reports changes of the file at path from fsnotify: these
// systems do not say when a writer closes the file, so every change waits
// for the settle interval (a rename into place looks like a creation).
func watchFile(ctx context.Context, path string) (<-chan fileEvent, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	clean := filepath.Clean(path)
	if err := fw.Add(filepath.Dir(clean)); err != nil {
		fw.Close()
		return nil, err
	}
	events := make(chan fileEvent, 1)
	go func() {
		defer fw.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-fw.Events:
				if !ok {
					return
				}
				if filepath.Clean(ev.Name) == clean && ev.Op.Has(fsnotify.Write|fsnotify.Create|fsnotify.Rename) {
					select {
					case events <- fileEvent{}:
					default:
					}
				}
			case _, ok := <-fw.Errors:
				if !ok {
					return
				}
			}
		}
	}()
	return events, nil
}
