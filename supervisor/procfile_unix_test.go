//go:build unix

package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A Procfile line runs under sh -c on Unix (cmd /C on Windows).
func TestProcfile_ParsedAsForemanDoes(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("GREETING=hi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := []byte("# the stack\n\nweb: bundle exec puma -p $PORT\nworker:  ./worker --queue default  \n  # indented comment\nclock: ./clock\n")
	for _, name := range []string{"Procfile", "Procfile.dev", "procs"} {
		path := filepath.Join(dir, name)
		if !IsProcfile(path, data) {
			t.Fatalf("%s: not detected as a Procfile", name)
		}
		cfg, err := ParseConfig(path, data, func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if strings.Join(cfg.Order, ",") != "clock,web,worker" {
			t.Fatalf("order %v", cfg.Order)
		}
		for n, port := range map[string]string{"web": "5000", "worker": "5100", "clock": "5200"} {
			p := cfg.Processes[n]
			if p.Env["PORT"] != port || p.Env["PS"] != n+".1" || p.Env["GREETING"] != "hi" || p.Cwd != dir {
				t.Fatalf("%s: env %v cwd %s, want PORT=%s PS=%s.1 GREETING=hi", n, p.Env, p.Cwd, port, n)
			}
		}
		if w := cfg.Processes["worker"]; w.Command != "sh" || len(w.Args) != 2 || w.Args[1] != "./worker --queue default" {
			t.Fatalf("worker runs %s %q", w.Command, w.Args)
		}
	}
	// foreman's base port: PORT of .env, else of the environment.
	cfg, err := ParseConfig(filepath.Join(dir, "Procfile"), data, func(k string) (string, bool) { return "7000", k == "PORT" })
	if err != nil || cfg.Processes["worker"].Env["PORT"] != "7100" {
		t.Fatalf("PORT=7000 in the environment: worker PORT %v, %v", cfg.Processes["worker"].Env["PORT"], err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("PORT=6000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err = ParseConfig(filepath.Join(dir, "Procfile"), data, func(k string) (string, bool) { return "7000", k == "PORT" })
	if err != nil || cfg.Processes["web"].Env["PORT"] != "6000" || cfg.Processes["clock"].Env["PORT"] != "6200" {
		t.Fatalf("PORT=6000 in .env: web %v, %v", cfg.Processes["web"].Env, err)
	}
	// A YAML file is never taken for a Procfile, even one that looks like it.
	for _, yml := range []struct{ path, data string }{
		{"ops.yaml", "web: ./web\n"},
		{"ops", "processes:\n  web: {command: ./web}\n"},
		{"ops", "web:\n  command: ./web\n"},
	} {
		if IsProcfile(yml.path, []byte(yml.data)) {
			t.Errorf("%s %q taken for a Procfile", yml.path, yml.data)
		}
	}
}
