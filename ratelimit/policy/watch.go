package policy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"time"
)

// Watch polls path every interval and calls onChange with the new policy
// whenever the file's content differs from current's and parses. A file that fails to
// parse is reported to onError and the old policy stays in force. Reload,
// when non-nil, forces an immediate re-read on each receive (SIGHUP). Watch
// returns when ctx ends.
func Watch(ctx context.Context, path string, current *Policy, interval time.Duration, reload <-chan struct{}, onChange func(*Policy), onError func(error)) {
	last := current.Digest[:]
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		force := false
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-reload:
			force = true
		}
		data, err := os.ReadFile(path)
		if err != nil {
			onError(err)
			continue
		}
		sum := sha256.Sum256(data)
		if !force && bytes.Equal(sum[:], last) {
			continue
		}
		last = sum[:]
		p, err := Parse(path, data)
		if err != nil {
			onError(err)
			continue
		}
		onChange(p)
	}
}
