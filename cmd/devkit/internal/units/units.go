// Package units renders sizes, durations and rates the way the CLI's
// tables and live views print them: short, and the same everywhere.
package units

import (
	"fmt"
	"time"
)

// Bytes renders n in binary units with one decimal (512B, 1.5K, 12.0M);
// "-" for 0, which the reports use for "not measured".
func Bytes(n int64) string {
	if n <= 0 {
		return "-"
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	v, suffix := float64(n), "KMGTPE"
	i := -1
	for v >= unit && i < len(suffix)-1 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f%c", v, suffix[i])
}

// CPUTime renders cumulative CPU seconds as ps's TIME does, to the
// hundredth under a minute (0.42s, 1m05s, 2h03m); "-" for 0.
func CPUTime(sec float64) string {
	if sec <= 0 {
		return "-"
	}
	if sec < 60 {
		return fmt.Sprintf("%.2fs", sec)
	}
	d := time.Duration(sec * float64(time.Second))
	if d < time.Hour {
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// Duration renders an uptime to the second, in at most two units (45s,
// 3m12s, 2h05m, 3d04h); "-" for 0 or less.
func Duration(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}

// Rate renders a per-second rate with a precision that fits its size.
func Rate(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}
