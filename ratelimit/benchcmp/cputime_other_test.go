//go:build !unix

package benchcmp

import "time"

// processCPU is not measured here: the CPU columns read 0.
func processCPU() time.Duration { return 0 }
