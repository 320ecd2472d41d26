//go:build !linux

package proc

import (
	"errors"
	"os"
)

// CgroupsAvailable reports whether this platform can put a process into a
// cgroup of its own at spawn.
const CgroupsAvailable = false

// OwnCgroupDir is not available here.
func OwnCgroupDir() (string, error) { return "", errors.ErrUnsupported }

// MakeCgroup is not available here.
func MakeCgroup(dir string) (*os.File, error) { return nil, errors.ErrUnsupported }

// CgroupMembers is not available here: no cgroup is ever recorded.
func CgroupMembers(dir string) ([]Info, error) { return nil, nil }

// RemoveCgroup is not available here.
func RemoveCgroup(dir string) error { return nil }

// LimitsParent is not available here: resource limits need Linux's cgroup v2.
func LimitsParent(own string) (string, error) {
	return "", errors.New("resource limits need Linux's cgroup v2")
}

// SetCgroupLimits is not available here.
func SetCgroupLimits(dir string, memoryMax int64, cpuMax float64) error { return errors.ErrUnsupported }

// CgroupOOMKills is not available here.
func CgroupOOMKills(dir string) (int, bool) { return 0, false }
