package supervisor

// Invariant: a file kept open here is read as a process's only while it
// still names that process. An open /proc/<pid> file stays bound to the
// process it was opened for — once that one is reaped, a read fails rather
// than describe a later process with the same PID — and a file is kept only
// after what it read matched the verified identity.

import (
	"errors"
	"io"
	"os"
	"strconv"

	"github.com/devkit-go/devkit/supervisor/internal/proc"
)

// procFiles keeps /proc/<pid>/stat and statm open for a StatusReader, so
// that a report reads each with one pread instead of open, read and close.
type procFiles struct {
	open map[procFile]*keptFile
	buf  []byte
}

type procFile struct {
	id   proc.Identity
	name string // "stat" or "statm"
}

type keptFile struct {
	f    *os.File
	used bool // read since the last sweep
}

func newProcFiles() *procFiles {
	return &procFiles{open: map[procFile]*keptFile{}, buf: make([]byte, 4096)}
}

// verify is proc.Verify through the files kept.
func (p *procFiles) verify(id proc.Identity) (proc.Info, error) {
	if p == nil || id.PID <= 0 {
		return proc.Verify(id)
	}
	data, ok := p.stat(id)
	if !ok {
		return proc.Verify(id) // gone, reused or a zombie: Verify says which
	}
	return proc.FromStat(id.PID, data)
}

// stat returns the content of id's /proc/<pid>/stat while it is id's,
// keeping the file open. The slice is valid until the next read.
func (p *procFiles) stat(id proc.Identity) ([]byte, bool) {
	key := procFile{id, "stat"}
	if data, ok := p.read(key); ok {
		if info, err := proc.FromStat(id.PID, data); err == nil && info.Identity.Same(id) {
			return data, true
		}
		p.drop(key)
		return nil, false
	}
	f, err := os.Open("/proc/" + strconv.Itoa(id.PID) + "/stat")
	if err != nil {
		return nil, false
	}
	p.open[key] = &keptFile{f: f}
	data, ok := p.read(key)
	if !ok {
		return nil, false
	}
	if info, err := proc.FromStat(id.PID, data); err != nil || !info.Identity.Same(id) {
		p.drop(key)
		return nil, false
	}
	return data, true
}

// usage is processUsage through the files kept: statm is kept once stat,
// read after statm was opened, shows the process still alive (so the PID
// named it when statm was opened).
func (p *procFiles) usage(id proc.Identity) (cpuSeconds float64, rssPages int64, ok bool) {
	data, ok := p.stat(id)
	if !ok {
		return 0, 0, false
	}
	ticks, _, ok := statTimes(data)
	if !ok {
		return 0, 0, false
	}
	key := procFile{id, "statm"}
	if _, kept := p.open[key]; !kept {
		f, err := os.Open("/proc/" + strconv.Itoa(id.PID) + "/statm")
		if err != nil {
			return 0, 0, false
		}
		if _, alive := p.stat(id); !alive {
			_ = f.Close() // read-only
			return 0, 0, false
		}
		p.open[key] = &keptFile{f: f}
	}
	statm, ok := p.read(key)
	if !ok {
		return 0, 0, false
	}
	rss, ok := statmRSS(statm)
	return float64(ticks) / userHZ, rss, ok
}

// read reads a kept file from its start; a file that cannot be read (its
// process is gone) is closed and forgotten.
func (p *procFiles) read(key procFile) ([]byte, bool) {
	k, ok := p.open[key]
	if !ok {
		return nil, false
	}
	for {
		n, err := k.f.ReadAt(p.buf, 0)
		if err != nil && !errors.Is(err, io.EOF) || n == 0 {
			p.drop(key)
			return nil, false
		}
		if n < len(p.buf) {
			k.used = true
			return p.buf[:n], true
		}
		p.buf = make([]byte, 2*len(p.buf)) // a line longer than the buffer: read it whole
	}
}

func (p *procFiles) drop(key procFile) {
	if k, ok := p.open[key]; ok {
		_ = k.f.Close() // read-only
		delete(p.open, key)
	}
}

// sweep closes the files no report read since the last sweep: processes
// that stopped, or are no longer asked about.
func (p *procFiles) sweep() {
	if p == nil {
		return
	}
	for key, k := range p.open {
		if !k.used {
			p.drop(key)
			continue
		}
		k.used = false
	}
}
