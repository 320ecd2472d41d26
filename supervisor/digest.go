package supervisor

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Digest fingerprints everything that changes what runs: command, args,
// the environment (env_file contents included), working directory, log
// file, stop signal and timeout, and the restart policy. Readiness, order
// and log rotation are left out: changing them must not restart anything.
func (p *Process) Digest() string {
	material := struct {
		Command     string            `json:"command"`
		Args        []string          `json:"args"`
		Env         map[string]string `json:"env"` // encoding/json sorts keys
		Cwd         string            `json:"cwd"`
		LogFile     string            `json:"log_file"`
		StopSignal  string            `json:"stop_signal"`
		StopTimeout int64             `json:"stop_timeout_ns"`
		Restart     RestartPolicy     `json:"restart"`
	}{p.Command, p.Args, p.Env, p.Cwd, p.LogFile, p.StopSignal, int64(p.StopTimeout), p.Restart}
	data, _ := json.Marshal(material) // cannot fail: only strings, maps and numbers
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
