package supervisor

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func parse(t *testing.T, yaml string, env map[string]string) (*Config, error) {
	t.Helper()
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	return ParseConfig("ops.yaml", []byte(yaml), lookup)
}

func TestParseConfig_ErrorsNameFileLineAndField(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"bad duration", "processes:\n  kv:\n    command: kv\n    stop_timeout: ten\n",
			`ops.yaml:4: processes.kv.stop_timeout: "ten" is not a duration`},
		{"unknown key", "processes:\n  kv:\n    command: kv\n    comand: x\n",
			`ops.yaml:4: processes.kv.comand: unknown field`},
		{"unknown top-level key", "procs: {}\n", `ops.yaml:1: procs: unknown field (want processes)`},
		{"missing command", "processes:\n  kv:\n    args: [a]\n", `ops.yaml:3: processes.kv.command: missing`},
		{"unknown dependency", "processes:\n  api:\n    command: a\n    depends_on: [db]\n",
			`ops.yaml:3: processes.api.depends_on: unknown process "db"`},
		{"unknown dependency of a replica set", "processes:\n  api:\n    command: a\n    replicas: 2\n    depends_on: [db]\n",
			`ops.yaml:3: processes.api.depends_on: unknown process "db"`},
		{"condition after a replica set counts items as written",
			"processes:\n  api:\n    command: a\n    replicas: 2\n  cache:\n    command: c\n  web:\n    command: w\n" +
				"    depends_on: [{name: api, condition: started}, {name: cache, condition: healthy}]\n",
			`ops.yaml:9: processes.web.depends_on[1].condition: healthy needs a health check on cache (health: {every: 10s})`},
		{"disabled replica set", "processes:\n  api:\n    command: a\n    replicas: 2\n    disabled: true\n  web:\n    command: w\n    depends_on: [api]\n",
			`ops.yaml:7: processes.web.depends_on: api is disabled: start --all would have to start it; disable web too, or enable api`},
		{"cycle", "processes:\n  a:\n    command: a\n    depends_on: [b]\n  b:\n    command: b\n    depends_on: [a]\n",
			`ops.yaml:3: processes.a.depends_on: dependency cycle a -> b -> a`},
		{"undefined variable", "processes:\n  kv:\n    command: kv\n    env:\n      PORT: ${PORT}\n",
			`ops.yaml:5: processes.kv.env.PORT: ${PORT} is not set (use ${PORT:-default} for a default)`},
		{"two probes", "processes:\n  kv:\n    command: kv\n    ready: {tcp: 'a:1', http: 'http://a/'}\n",
			`ops.yaml:4: processes.kv.ready: want exactly one of tcp, http, exec, log`},
		{"bad restart", "processes:\n  kv:\n    command: kv\n    restart: sometimes\n",
			`ops.yaml:4: processes.kv.restart: "sometimes" is not one of never, on-failure, always`},
		{"bad signal", "processes:\n  kv:\n    command: kv\n    stop_signal: STOPPLS\n",
			`ops.yaml:4: processes.kv.stop_signal: "STOPPLS" is not a stop signal (TERM, INT, HUP, QUIT, KILL, USR1, USR2)`},
		{"duplicate key", "processes:\n  kv:\n    command: kv\n    command: kv2\n",
			`ops.yaml:4: processes.kv.command: duplicate key`},
		{"syntax", "processes:\n  kv: [\n", `ops.yaml:2: processes.kv: did not find expected node content`},
		{"type error", "processes:\n  kv:\n    command: kv\n    log_backups: [1]\n",
			`ops.yaml:4: processes.kv.log_backups: must be a single value`},
		{"second document", "processes:\n  kv:\n    command: kv\n---\nprocesses: {}\n",
			`ops.yaml:4: a second YAML document (after ---) is not read; keep one document per file`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, tt.yaml, nil)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v\nwant  %s", err, tt.want)
			}
		})
	}
}

func TestParseConfig_DefaultsAndValues(t *testing.T) {
	cfg, err := parse(t, `
processes:
  db:
    command: postgres
    stop_timeout: 3          # plain integers are seconds
    log_max_size: 1MiB
    log_backups: 2
    restart: {policy: on-failure, max_restarts: 4, backoff: 100ms, max_backoff: 1s}
  api:
    command: ${BIN:-./api}
    args: ["--port", "${PORT}"]
    depends_on: [db]
    ready: {http: "http://127.0.0.1:${PORT}/health", timeout: 2s}
    restart: always
`, map[string]string{"PORT": "8080"})
	if err != nil {
		t.Fatal(err)
	}
	db, api := cfg.Processes["db"], cfg.Processes["api"]
	if db.StopTimeout != 3*time.Second || db.StopSignal != "TERM" || db.LogMaxSize != 1<<20 || db.LogBackups != 2 {
		t.Errorf("db = %+v", db)
	}
	if db.Restart != (RestartPolicy{Mode: RestartOnFailure, MaxRestarts: 4, Backoff: 100 * time.Millisecond, MaxBackoff: time.Second}) {
		t.Errorf("db restart = %+v", db.Restart)
	}
	if api.Command != "./api" || !slices.Equal(api.Args, []string{"--port", "8080"}) || api.Ready.HTTP != "http://127.0.0.1:8080/health" {
		t.Errorf("api = %+v ready %+v", api, api.Ready)
	}
	if api.StopTimeout != DefaultStopTimeout || api.Restart.Mode != RestartAlways || api.Restart.MaxRestarts != DefaultMaxRestarts {
		t.Errorf("api defaults = %+v", api)
	}
	if !slices.Equal(cfg.Order, []string{"db", "api"}) {
		t.Errorf("order = %v", cfg.Order)
	}
}

func TestInterpolate(t *testing.T) {
	env := map[string]string{"A": "1", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := map[string]string{
		"x${A}y":          "x1y",
		"${B:-two}":       "two",
		"${EMPTY:-dflt}":  "dflt",
		"${EMPTY}":        "",
		"$${A} and $HOME": "${A} and $HOME",
		"no vars":         "no vars",
		// Nested defaults, expanded only when used.
		"${B:-${A}}":         "1",
		"${B:-${C:-deep}}!":  "deep!",
		"${A:-${B}}":         "1",
		"a${B:-x${A}y}b${A}": "ax1yb1",
	}
	for in, want := range tests {
		got, err := interpolate(in, lookup)
		if err != nil || got != want {
			t.Errorf("interpolate(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := interpolate("${B}", lookup); !errors.Is(err, ErrUnsetVariable) {
		t.Errorf("undefined variable without default: %v, want ErrUnsetVariable", err)
	}
	if _, err := interpolate("${B:-${C}}", lookup); !errors.Is(err, ErrUnsetVariable) {
		t.Errorf("nested default of an unset variable: %v, want ErrUnsetVariable", err)
	}
	if _, err := interpolate("${B:-${A}", lookup); err == nil || !strings.Contains(err.Error(), "unterminated") {
		t.Errorf("unterminated nested default: %v", err)
	}
}

func TestParseConfig_NestedDefaultErrorsNameFileLineAndField(t *testing.T) {
	yaml := "processes:\n  app:\n    command: app\n    env:\n      X: \"${SUP_TEST_UNSET_1:-${SUP_TEST_UNSET_2}}\"\n"
	_, err := ParseConfig("ops.yaml", []byte(yaml), func(string) (string, bool) { return "", false })
	if err == nil || err.Error() != "ops.yaml:5: processes.app.env.X: ${SUP_TEST_UNSET_2} is not set (use ${SUP_TEST_UNSET_2:-default} for a default)" {
		t.Fatalf("err = %v", err)
	}
}

func TestDigest_CoversEnvFileContentsAndNotReadiness(t *testing.T) {
	dir := t.TempDir()
	envFile := filepath.Join(dir, "app.env")
	os.WriteFile(envFile, []byte("# comment\nexport TOKEN=\"a b\"\nMODE='x'\n"), 0o600)
	load := func(extra string) *Process {
		cfg, err := ParseConfig(filepath.Join(dir, "ops.yaml"), []byte("processes:\n  app:\n    command: app\n    env_file: app.env\n"+extra), os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Processes["app"]
	}
	base := load("")
	if base.Env["TOKEN"] != "a b" || base.Env["MODE"] != "x" {
		t.Fatalf("env from env_file = %v", base.Env)
	}
	if load("    ready: {tcp: 'localhost:1'}\n    log_backups: 9\n").Digest() != base.Digest() {
		t.Error("readiness or rotation changed the digest")
	}
	os.WriteFile(envFile, []byte("TOKEN=changed\n"), 0o600)
	if load("").Digest() == base.Digest() {
		t.Error("a changed env_file did not change the digest")
	}
}

func TestDigest_SurvivesJSONRoundTrip(t *testing.T) {
	p := &Process{Name: "a", Command: "a", Env: map[string]string{}, Args: []string{}}
	q := &Process{Name: "a", Command: "a"}
	if p.Digest() != q.Digest() {
		t.Fatal("empty and nil env/args fingerprint differently")
	}
}

// TestParseConfig_DurationsShareTheFlagGrammar: a YAML duration reads as a
// --timeout flag does (duration.Parse): `stop_timeout: 1.5` is 1.5 s.
func TestParseConfig_DurationsShareTheFlagGrammar(t *testing.T) {
	cfg, err := parse(t, "processes:\n  kv:\n    command: kv\n    stop_timeout: 1.5\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Processes["kv"].StopTimeout; got != 1500*time.Millisecond {
		t.Fatalf("stop_timeout: 1.5 = %v, want 1.5s", got)
	}
	if _, err := parse(t, "processes:\n  kv:\n    command: kv\n    stop_timeout: -1\n", nil); err == nil {
		t.Fatal("stop_timeout: -1 accepted")
	}
}

func TestConfig_HealthNeedsARerunnableReadyProbe(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"processes:\n  a:\n    command: x\n    health: {every: 1s}\n", "ops.yaml:4: processes.a.health: needs a liveness or ready probe"},
		{"processes:\n  a:\n    command: x\n    ready: {log: up}\n    health: {every: 1s}\n", "ops.yaml:5: processes.a.health: a log ready probe cannot be re-run"},
		{"processes:\n  a:\n    command: x\n    ready: {tcp: \"127.0.0.1:1\"}\n    health: {every: 0s}\n", "ops.yaml:5: processes.a.health.every: must be positive"},
		{"processes:\n  a:\n    command: x\n    ready: {tcp: \"127.0.0.1:1\"}\n    health: {failures: 0}\n", "ops.yaml:5: processes.a.health.failures: must be at least 1"},
	} {
		_, err := ParseConfig("ops.yaml", []byte(tc.yaml), os.LookupEnv)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %s", tc.yaml, err, tc.want)
		}
	}
}

func TestConfig_YAMLSyntaxErrorsNameTheLineOfTheMistake(t *testing.T) {
	for _, tc := range []struct {
		yaml  string
		line  int
		field string
	}{
		{"processes:\n  a:\n    command: x\n    args: [1, 2\n  b:\n    command: y\n", 4, "processes.a.args"},
		{"processes:\n  a:\n    command: x\n   bad: indent\n", 4, "processes.a.bad"},
		{"processes:\n  a:\n    command: x\n  - b\n", 4, "processes"},
		{"processes:\n  a:\n    command: x\n    ready: {tcp: 'a:1'\n    stop_timeout: 1s\n", 4, "processes.a.ready"},
		{"processes:\n  a:\n    args: [\n      1,\n      2]\n    command: x\n  b:\n    command: y\n   c: 1\n", 9, "processes.b.c"},
		{"processes:\n  a:\n    command: x\n    env:\n      A: 1\n      B: \"2\n", 6, "processes.a.env.B"},
		{"processes:\n  a:\n    command: x\n    args:\n      - x\n     - http://a:1/\n", 6, "processes.a.args[1]"},
	} {
		_, err := ParseConfig("ops.yaml", []byte(tc.yaml), os.LookupEnv)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Line != tc.line || ce.Field != tc.field {
			t.Errorf("%q: %v, want line %d, field %s", tc.yaml, err, tc.line, tc.field)
		}
	}
}

func TestParseConfig_BadResourcesNameFileLineAndField(t *testing.T) {
	for _, tc := range []struct{ resources, want string }{
		{`{cpu_max: lots}`, `ops.yaml:4: processes.a.resources.cpu_max: "lots" is not a number of CPUs`},
		{`{cpu_max: 0.001}`, `ops.yaml:4: processes.a.resources.cpu_max: 0.001 is below 0.01`},
		{`{memory_max: 1K}`, `ops.yaml:4: processes.a.resources.memory_max: 1024 bytes is too little`},
		{`{memory_max: ten}`, `ops.yaml:4: processes.a.resources.memory_max: "ten" is not a size`},
		{`{swap: 1G}`, `ops.yaml:4: processes.a.resources.swap: unknown field`},
		{`{}`, `ops.yaml:4: processes.a.resources: want memory_max, cpu_max or both`},
	} {
		yaml := "processes:\n  a:\n    command: x\n    resources: " + tc.resources + "\n"
		_, err := ParseConfig("ops.yaml", []byte(yaml), func(string) (string, bool) { return "", false })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("resources %s: %v, want %q", tc.resources, err, tc.want)
		}
	}
	cfg, err := ParseConfig("ops.yaml", []byte("processes:\n  a:\n    command: x\n    resources: {memory_max: 512MB, cpu_max: 1.5}\n"), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if r := cfg.Processes["a"].Resources; r == nil || r.MemoryMax != 512e6 || r.CPUMax != 1.5 {
		t.Fatalf("resources = %+v", r)
	}
}
