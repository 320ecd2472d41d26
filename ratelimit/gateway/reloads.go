package gateway

import (
	"encoding/hex"
	"sync"
	"time"

	"github.com/devkit-go/devkit/ratelimit/policy"
)

// reloadLog is what the admin API tells of the policy file's reloads.
type reloadLog struct {
	mu        sync.Mutex
	at        time.Time
	removed   []string
	lastErr   string
	lastErrAt time.Time
}

func (l *reloadLog) done(p *policy.Policy, removed []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at, l.removed = time.Now(), removed
}

func (l *reloadLog) failed(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lastErr, l.lastErrAt = err.Error(), time.Now()
}

// PolicyStatus is the admin API's /policy: the policy in force and what
// its file's last reload did.
type PolicyStatus struct {
	Source string   `json:"source"`
	Digest string   `json:"digest"`
	Rules  []string `json:"rules"`
	// ReloadedAt is when the file was last applied (absent before).
	ReloadedAt *time.Time `json:"reloaded_at,omitempty"`
	// Removed are the rules and limits the last reload removed.
	Removed []string `json:"removed"`
	// LastError is the last reload refused (the file did not parse or
	// could not be read), with its time; the policy in force stayed.
	LastError   string     `json:"last_error,omitempty"`
	LastErrorAt *time.Time `json:"last_error_at,omitempty"`
}

func (s *Server) policyStatus() any {
	p := s.Policy()
	st := PolicyStatus{Source: p.Source, Digest: hex.EncodeToString(p.Digest[:]), Rules: []string{}, Removed: []string{}}
	for _, r := range p.Rules {
		st.Rules = append(st.Rules, r.Name)
	}
	l := &s.reloads
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.at.IsZero() {
		at := l.at
		st.ReloadedAt = &at
		st.Removed = append(st.Removed, l.removed...)
	}
	if l.lastErr != "" {
		at := l.lastErrAt
		st.LastError, st.LastErrorAt = l.lastErr, &at
	}
	return st
}
