package proc

import "golang.org/x/sys/unix"

// BecomeSubreaper makes the calling process the reaper of every orphaned
// descendant (PR_SET_CHILD_SUBREAPER): a daemon that double-forks or calls
// setsid is reparented to us instead of init, so it stays in our tree,
// findable and signallable, and its exit is reaped here.
func BecomeSubreaper() error { return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) }

// CanTrackDescendants reports whether BecomeSubreaper is available.
const CanTrackDescendants = true
