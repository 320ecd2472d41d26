//go:build unix

package resp

import (
	"syscall"
	"time"
)

// cpuTimes are the user and system CPU times of this process and of its
// waited-for children, for INFO's cpu section.
func cpuTimes() (self, children [2]time.Duration, ok bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return self, children, false
	}
	self = [2]time.Duration{time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())}
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) == nil {
		children = [2]time.Duration{time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())}
	}
	return self, children, true
}
