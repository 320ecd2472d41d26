package proc

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// PortHolder returns the process listening on TCP port, if the kernel lets
// us see it: the socket inode comes from /proc/net/tcp{,6} and its owner
// from the fd links under /proc/<pid>/fd.
func PortHolder(port int) (Info, bool) {
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		listeningInodes(table, port, inodes)
	}
	if len(inodes) == 0 {
		return Info{}, false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return Info{}, false
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue // not a process
		}
		fds, err := os.ReadDir("/proc/" + e.Name() + "/fd")
		if err != nil {
			continue // gone, or another user's (EACCES): this only names a holder where the OS tells
		}
		for _, fd := range fds {
			link, err := os.Readlink("/proc/" + e.Name() + "/fd/" + fd.Name())
			if err != nil || !strings.HasPrefix(link, "socket:[") { // a descriptor closed meanwhile is not the holder

				continue
			}
			if inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
				info, err := Lookup(pid)
				if err != nil {
					return Info{}, false // gone meanwhile: the caller says "another process"
				}
				return info, true
			}
		}
	}
	return Info{}, false
}

// listeningInodes adds the inodes of sockets listening on port in table.
func listeningInodes(table string, port int, into map[string]bool) {
	f, err := os.Open(table)
	if err != nil {
		return // no such table (IPv6 off): no listeners in it
	}
	defer func() { _ = f.Close() }() // read-only
	suffix := fmt.Sprintf(":%04X", port)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// sl local_address rem_address st tx_queue rx_queue tr tm->when retrnsmt uid timeout inode
		if len(fields) < 10 || fields[3] != "0A" || !strings.HasSuffix(fields[1], suffix) {
			continue
		}
		into[fields[9]] = true
	}
}
