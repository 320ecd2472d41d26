package epollwait

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Both waits: nothing ready returns at once without block; with block the
// wait returns when a descriptor becomes ready, and only then; the close
// closes the epoll descriptor.
func TestNew_BothWaysWaitForReadinessAndClose(t *testing.T) {
	for _, direct := range []bool{true, false} {
		epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(efd)
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET, Fd: int32(efd)}
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, efd, &ev); err != nil {
			t.Fatal(err)
		}
		wait, closeFn, err := New(epfd, direct)
		if err != nil {
			t.Fatal(err)
		}
		events := make([]unix.EpollEvent, 4)
		if n, err := wait(events, false); n != 0 || err != nil {
			t.Fatalf("direct=%v: nothing ready, no block: %d, %v; want 0, nil", direct, n, err)
		}
		got := make(chan int, 1)
		go func() {
			n, err := wait(events, true)
			if err != nil {
				t.Error(err)
			}
			got <- n
		}()
		select {
		case n := <-got:
			t.Fatalf("direct=%v: a blocking wait returned %d with nothing ready", direct, n)
		case <-time.After(50 * time.Millisecond):
		}
		if _, err := unix.Write(efd, []byte{1, 0, 0, 0, 0, 0, 0, 0}); err != nil {
			t.Fatal(err)
		}
		select {
		case n := <-got:
			if n != 1 || int(events[0].Fd) != efd {
				t.Fatalf("direct=%v: woke with %d events (%v), want the eventfd's", direct, n, events[:n])
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("direct=%v: a blocking wait did not wake when the eventfd became readable", direct)
		}
		closeFn()
		if _, err := unix.EpollWait(epfd, events, 0); err != unix.EBADF {
			t.Fatalf("direct=%v: after close, epoll_wait: %v; want EBADF (the descriptor closed)", direct, err)
		}
	}
}
