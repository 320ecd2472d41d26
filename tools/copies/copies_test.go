// Package copies checks the deliberate copies of the house: mechanisms that
// more than one module needs, kept as identical files (below the package
// clause) because the modules never import each other.
package copies

// go test caches this result without watching the files it reads (they are
// outside the tools module): make test runs it with -count=1.

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// copySets lists each mechanism's copies, paths from the repository root.
var copySets = map[string][]string{
	"durations": {
		"supervisor/internal/units/units.go",
		"ratelimit/internal/units/units.go",
		"cmd/devkit/internal/cmdutil/duration.go",
	},
	"yaml errors": {
		"supervisor/internal/yamlerr/yamlerr.go",
		"ratelimit/internal/yamlerr/yamlerr.go",
	},
	"durable rename (unix)": {
		"kvstore/internal/vfs/syncdir_unix.go",
		"supervisor/internal/atomicfile/syncdir_unix.go",
	},
	"durable rename (windows)": {
		"kvstore/internal/vfs/syncdir_windows.go",
		"supervisor/internal/atomicfile/syncdir_windows.go",
	},
	"lock contention (unix)": {
		"kvstore/internal/dirlock/trylock_unix.go",
		"supervisor/internal/lockfile/trylock_unix.go",
	},
	"JSON schema rule": {
		"ratelimit/internal/jsonschema/jsonschema.go",
		"kvstore/internal/jsonschema/jsonschema.go",
		"cmd/devkit/internal/jsonschema/jsonschema.go",
	},
	"lock contention (windows)": {
		"kvstore/internal/dirlock/trylock_windows.go",
		"supervisor/internal/lockfile/trylock_windows.go",
	},
}

var packageClause = regexp.MustCompile(`(?s)\A.*?\npackage \w+\n`)

func TestCopies_AreIdenticalBelowThePackageClause(t *testing.T) {
	for name, paths := range copySets {
		var first []byte
		for i, p := range paths {
			b, err := os.ReadFile(filepath.Join("..", "..", p))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			body := packageClause.ReplaceAll(append([]byte("\n"), b...), nil)
			if !bytes.Contains(body, []byte("deliberate copy")) {
				t.Errorf("%s: %s lacks the deliberate-copy header", name, p)
			}
			if i == 0 {
				first = body
				continue
			}
			if !bytes.Equal(body, first) {
				t.Errorf("%s: %s differs from %s below the package clause; change every copy together", name, p, paths[0])
			}
		}
	}
}
