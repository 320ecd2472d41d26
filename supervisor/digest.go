package supervisor

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
)

// Digest fingerprints everything that changes what runs: command, args,
// the environment (env_file contents included), working directory, log
// file, stop signal and timeout, the restart policy, the user and the resource limits. Readiness, order
// and log rotation are left out: changing them must not restart anything.
func (p *Process) Digest() string {
	// nil and empty must fingerprint alike: a spec that went through JSON
	// (to a monitor and back) has lost the difference.
	args := append([]string{}, p.Args...)
	env := map[string]string{}
	maps.Copy(env, p.Env)
	material := struct {
		Command     string            `json:"command"`
		Args        []string          `json:"args"`
		Env         map[string]string `json:"env"` // encoding/json sorts keys
		Cwd         string            `json:"cwd"`
		LogFile     string            `json:"log_file"`
		StopSignal  string            `json:"stop_signal"`
		StopTimeout int64             `json:"stop_timeout_ns"`
		Restart     RestartPolicy     `json:"restart"`
		Timestamps  bool              `json:"log_timestamps,omitempty"` // how output reaches the log
		RunAs       *RunAs            `json:"run_as,omitempty"`
		Resources   *Resources        `json:"resources,omitempty"`
	}{p.Command, args, env, p.Cwd, p.LogFile, p.StopSignal, int64(p.StopTimeout), p.Restart, p.LogTimestamps, p.RunAs, p.Resources}
	data, _ := json.Marshal(material) // cannot fail: only strings, maps and numbers
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
