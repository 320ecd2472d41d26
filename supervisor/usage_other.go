//go:build !linux

package supervisor

import "github.com/devkit-go/devkit/supervisor/internal/proc"

// cgroupUsage: there are no cgroups off Linux.
func cgroupUsage(string) (usage, bool) { return usage{}, false }

// treeUsage is not measured off Linux yet: the fields stay empty.
func treeUsage([]proc.Info, *procFiles) usage { return usage{} }
