package resp

import (
	"golang.org/x/sys/unix"

	"github.com/devkit-go/devkit/kvstore/internal/epollwait"
)

// serveWhileBusy serves the loop's other connections while self's script
// runs past the busy time (called by the script engine's watchdog, while
// the loop's goroutine runs the script): their commands are answered BUSY,
// or run when Redis lets them (SCRIPT KILL, SHUTDOWN NOSAVE), and none of
// them reaches the engine, so no connection is parked. Readiness seen here
// is kept: self's for after its script, the loop's wake-up posted again.
// Connections whose readiness the loop took from epoll in self's round
// (so epoll reports them no more) are served too.
func (l *loop) serveWhileBusy(self *elConn) {
	if l.busyServing {
		return
	}
	l.busyServing = true
	defer func() { l.busyServing = false }()
	for _, c := range l.conns {
		if c != self && c.readable {
			l.service(c)
		}
	}
	var events [64]unix.EpollEvent
	n, err := unix.EpollWait(l.epfd, events[:], 0)
	if err != nil || n <= 0 {
		return
	}
	for _, ev := range events[:n] {
		fd := int(ev.Fd)
		if fd == l.wakefd {
			l.busyWoken = true
			l.adoptWhileBusy()
			continue
		}
		c := l.conns[fd]
		if c == nil {
			continue
		}
		if ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			c.readable = true
		}
		if c == self {
			continue
		}
		l.service(c)
	}
}

// afterBusy posts the loop's wake-up again if serveWhileBusy took it.
func (l *loop) afterBusy() {
	if l.busyWoken {
		l.busyWoken = false
		epollwait.Wake(l.wakefd)
	}
}

// adoptWhileBusy registers the connections accepted meanwhile, so that a
// client that connects while a script is busy is answered BUSY too; the
// rest of the posted work (kills, drain, quit, ticks) waits for the loop,
// which afterBusy wakes.
func (l *loop) adoptWhileBusy() {
	l.mu.Lock()
	incoming := l.incoming
	l.incoming = nil
	l.mu.Unlock()
	for _, c := range incoming {
		if c.closed {
			continue
		}
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(c.fd)}
		if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
			c.cl.log.Warn("epoll_ctl failed; closing the connection", "err", err)
			l.close(c)
			continue
		}
		l.conns[c.fd] = c
		l.service(c)
	}
}
