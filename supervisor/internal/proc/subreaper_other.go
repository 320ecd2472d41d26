//go:build !linux

package proc

// BecomeSubreaper is a no-op where the kernel has no subreaper: escaped
// descendants are then found through the session only.
func BecomeSubreaper() error { return nil }

// CanTrackDescendants reports whether BecomeSubreaper is available.
const CanTrackDescendants = false
