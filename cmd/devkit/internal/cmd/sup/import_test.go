package sup

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/supervisor"
)

func TestImport_WritesAnOpsYAMLTheSupervisorLoadsAndWarnsOnStderr(t *testing.T) {
	src := filepath.Join("..", "..", "importer", "testdata", "process-compose.yaml")
	out := filepath.Join(t.TempDir(), "ops.yaml")
	var stdout, stderr bytes.Buffer
	code := runCLI(&cmdutil.IOStreams{In: strings.NewReader(""), Out: &stdout, ErrOut: &stderr},
		[]string{"sup", "import", "process-compose", src, "-o", out})
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("with -o, stdout holds %q", stdout.String())
	}
	if !strings.Contains(stderr.String(), "warning: "+src+": line 66: processes.api.replicas") {
		t.Errorf("stderr lacks the replicas warning:\n%s", stderr.String())
	}
	cfg, err := supervisor.LoadConfig(out)
	if err != nil {
		t.Fatalf("the written ops.yaml does not load: %v", err)
	}
	if len(cfg.Processes) != 4 {
		t.Errorf("%d processes, want 4", len(cfg.Processes))
	}
}

func TestImport_StdoutByDefaultAndAnUnknownFormatIsAUsageError(t *testing.T) {
	src := filepath.Join("..", "..", "importer", "testdata", "supervisord.conf")
	var stdout, stderr bytes.Buffer
	ios := &cmdutil.IOStreams{In: strings.NewReader(""), Out: &stdout, ErrOut: &stderr}
	if code := runCLI(ios, []string{"sup", "import", "supervisord", src}); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "processes:\n  cron:") {
		t.Errorf("stdout is not the ops.yaml:\n%s", stdout.String())
	}
	stderr.Reset()
	if code := runCLI(ios, []string{"sup", "import", "systemd", src}); code != 2 {
		t.Errorf("an unknown format exits %d, want 2 (usage)", code)
	}
	if !strings.Contains(stderr.String(), `unknown format "systemd"`) {
		t.Errorf("stderr %q does not name the format", stderr.String())
	}
	stderr.Reset()
	if code := runCLI(ios, []string{"sup", "import", "supervisord", filepath.Join(t.TempDir(), "missing.conf")}); code != 1 {
		t.Errorf("a missing file exits %d, want 1\n%s", code, stderr.String())
	}
}
