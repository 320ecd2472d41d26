// Package epollwait is how an event loop waits on its epoll descriptor.
package epollwait

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Open creates an event loop's epoll descriptor with an eventfd, wakefd,
// registered in it for reading: other goroutines wake the loop's wait
// with Wake, and the loop, seeing wakefd ready, reads it back with Drain.
func Open() (epfd, wakefd int, err error) {
	epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return -1, -1, fmt.Errorf("epoll_create1: %w", err)
	}
	wakefd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return -1, -1, fmt.Errorf("eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wakefd)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakefd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(wakefd)
		return -1, -1, fmt.Errorf("epoll_ctl: %w", err)
	}
	return epfd, wakefd, nil
}

// Wake makes wakefd ready, ending the wait of the loop that watches it.
func Wake(wakefd int) {
	one := [8]byte{1}
	_, _ = unix.Write(wakefd, one[:])
}

// Drain reads wakefd back, so that it is ready again only after the next
// Wake.
func Drain(wakefd int) {
	var buf [8]byte
	_, _ = unix.Read(wakefd, buf[:])
}

// Tick calls post every d, on a goroutine of its own, until post reports
// that the loop has ended or stop is called: a loop's timeouts are
// checked on its own goroutine, woken by a tick.
func Tick(d time.Duration, post func() (ended bool)) (stop func()) {
	ticker := time.NewTicker(d)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-ticker.C:
				if post() {
					return
				}
			}
		}
	}()
	return func() { ticker.Stop(); close(done) }
}

// Wait returns the ready events of the descriptor in events; with block
// false it does not wait for any. An interrupted wait returns no events.
type Wait func(events []unix.EpollEvent, block bool) (int, error)

// New returns how a loop waits on epfd, and how that is undone (closing
// epfd). New owns epfd from the call on: on an error it has closed it.
//
// With direct, the loop blocks in epoll_wait itself: one system call per
// wake, and its thread keeps its P meanwhile. That is for a loop that
// leaves the runtime an idle P (sysmon leaves a P in a system call alone
// while another is idle); were every P held by a loop blocked in a system
// call, other goroutines would wait for sysmon to retake one.
//
// Otherwise epfd is registered with Go's poller, polled with a zero
// timeout, and the loop parks like any goroutine while nothing is ready:
// a P is never held by a loop with nothing to do, at the cost of a second
// epoll_pwait per wake (the runtime's, on its descriptor that holds
// epfd), a netpoller thread woken for readiness, and sysmon put to deep
// sleep at every park and woken by the next system call.
func New(epfd int, direct bool) (wait Wait, closeFn func(), err error) {
	if direct {
		wait = func(events []unix.EpollEvent, block bool) (int, error) {
			timeout := 0
			if block {
				timeout = -1
			}
			n, err := unix.EpollWait(epfd, events, timeout)
			if errors.Is(err, unix.EINTR) {
				return 0, nil
			}
			return n, err
		}
		return wait, func() { unix.Close(epfd) }, nil
	}
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		return nil, nil, err
	}
	ep := os.NewFile(uintptr(epfd), "epoll")
	rc, err := ep.SyscallConn()
	if err != nil {
		ep.Close() // closes epfd
		return nil, nil, err
	}
	wait = func(events []unix.EpollEvent, block bool) (int, error) {
		var n int
		var werr error
		if err := rc.Read(func(uintptr) bool {
			n, werr = unix.EpollWait(epfd, events, 0)
			return n > 0 || !block || (werr != nil && !errors.Is(werr, unix.EINTR))
		}); err != nil {
			return 0, err
		}
		if errors.Is(werr, unix.EINTR) {
			return 0, nil
		}
		return n, werr
	}
	return wait, func() { ep.Close() }, nil
}
