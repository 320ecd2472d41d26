//go:build !linux

package proc

// PortHolder is only implemented on Linux.
func PortHolder(port int) (Info, bool) { return Info{}, false }
