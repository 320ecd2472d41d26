package policy

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// watchFile reports the writer being done with the file at path: closed
// after writing (IN_CLOSE_WRITE), or a file renamed into its directory
// (IN_MOVED_TO, of any name: Kubernetes swaps a "..data" symlink). The
// pinned fsnotify keeps its close-write event unexported, so this reads
// inotify itself.
func watchFile(ctx context.Context, path string) (<-chan fileEvent, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, err
	}
	dir, name := filepath.Split(filepath.Clean(path))
	if dir == "" {
		dir = "."
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CLOSE_WRITE|unix.IN_MOVED_TO); err != nil {
		unix.Close(fd)
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "inotify") // non-blocking: reads wait on Go's poller, Close ends them
	events := make(chan fileEvent, 1)
	go func() {
		<-ctx.Done()
		f.Close()
	}()
	go func() {
		buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
		for {
			n, err := f.Read(buf)
			if err != nil {
				return
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				mask := binary.NativeEndian.Uint32(buf[off+4:])
				nameLen := int(binary.NativeEndian.Uint32(buf[off+12:]))
				start := off + unix.SizeofInotifyEvent
				evName := string(trimNUL(buf[start:min(start+nameLen, n)]))
				off = start + nameLen
				if mask&unix.IN_MOVED_TO != 0 || evName == name {
					select {
					case events <- fileEvent{done: true}:
					default: // one pending event says it all: the file is re-read
					}
				}
			}
		}
	}()
	return events, nil
}

func trimNUL(b []byte) []byte {
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	return b
}
