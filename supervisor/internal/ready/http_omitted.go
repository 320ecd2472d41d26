//go:build devkit_sup_monitor

package ready

import "context"

// HTTPProbes says whether this build can run HTTP probes: not one with the
// devkit_sup_monitor tag (devkit-sup-monitor), which links no net/http;
// devkit runs a process with an HTTP health probe under its own monitor.
const HTTPProbes = false

// HTTP is ready when URL answers with a 2xx status; this build cannot ask.
type HTTP struct {
	URL    string
	Client any // *http.Client where HTTP probes are built in
}

// Check fails: this build has no HTTP client.
func (p HTTP) Check(context.Context) error { return ErrNoHTTPProbes }
