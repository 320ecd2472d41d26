//go:build !unix

package resp_test

// selfCPU and procCPU report 0 where there is no getrusage and /proc.
func selfCPU() int64        { return 0 }
func procCPU(pid int) int64 { return 0 }
