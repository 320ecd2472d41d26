//go:build devkit_sup_monitor

package supervisor

// A build with the devkit_sup_monitor tag is devkit-sup-monitor: a monitor
// reads its spec as JSON from the CLI and never a config file, and every
// package it links costs memory in each supervised process's monitor, so
// YAML (config, Procfile, compose export) is left out.

import "errors"

// errNoConfigParser is what reading a config file gives in this build.
var errNoConfigParser = errors.New("supervisor: built as devkit-sup-monitor (tag devkit_sup_monitor), which reads no config file")

// ParseConfig fails in this build: see errNoConfigParser.
func ParseConfig(path string, data []byte, lookup func(string) (string, bool)) (*Config, error) {
	return nil, errNoConfigParser
}
