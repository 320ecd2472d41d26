//go:build !unix

package resp

import "time"

// cpuTimes reports no CPU times where there is no getrusage: INFO's cpu
// section is then empty.
func cpuTimes() (self, children [2]time.Duration, ok bool) { return self, children, false }
