// Package house checks rules of the whole tree that no single module can:
// that metrics follow one approach, and how the modules depend on each other
// (one shared internal module, no copies).
package house

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// metricServers are the packages that turn counters into Prometheus
// metrics: servers and their admin endpoints. Libraries expose plain
// counters and snapshots and import no metrics system.
var metricServers = []string{
	"kvstore/server/metrics",
	"kvstore/server/httpapi",
	"ratelimit/middleware", // the admin API's /metrics and its Collector
	"ratelimit/gateway",
	// Not a server: the live views read the servers' /metrics with
	// prometheus/common's parser, which is a client's use of the format.
	"cmd/devkit/internal/live",
}

var (
	prometheusImport = regexp.MustCompile(`"github\.com/prometheus/`)
	// handWritten is the text exposition format written by hand.
	handWritten = regexp.MustCompile(`"# (TYPE|HELP) `)
)

// TestMetrics_OnlyServersSpeakPrometheus: no package but the servers
// imports client_golang, and none writes the exposition format by hand.
func TestMetrics_OnlyServersSpeakPrometheus(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		pkg := filepath.ToSlash(filepath.Dir(rel))
		if handWritten.Match(b) {
			t.Errorf("%s writes the Prometheus text format by hand; use client_golang in a server package", rel)
		}
		if prometheusImport.Match(b) && !slices.Contains(metricServers, pkg) {
			t.Errorf("%s imports Prometheus, but %s is not a server (%v): expose counters and let a server collect them", rel, pkg, metricServers)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
