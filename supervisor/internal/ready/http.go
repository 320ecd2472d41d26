//go:build !devkit_sup_monitor

package ready

import (
	"context"
	"fmt"
	"net/http"
)

// HTTPProbes says whether this build can run HTTP probes: a build with the
// devkit_sup_monitor tag (devkit-sup-monitor) links no net/http, which
// costs each idle monitor about 140 KiB of PSS.
const HTTPProbes = true

// HTTP is ready when URL answers with a 2xx status.
type HTTP struct {
	URL    string
	Client *http.Client
}

// Check sends one GET.
func (p HTTP) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL, nil)
	if err != nil {
		return err
	}
	client := p.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close() // only the status matters
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s answered %s", p.URL, resp.Status)
	}
	return nil
}
