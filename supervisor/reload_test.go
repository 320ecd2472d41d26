//go:build unix

// Unix only: these run real processes under the supervisor and script them
// with Unix semantics (a SIGTERM obeyed or ignored, exit by signal, process
// groups, sh probes). Windows' process handling is tested in internal/proc.

package supervisor

import (
	"context"
	"strings"
	"testing"
)

func TestReload_StartsAddedAndRestartsDependentsThatAskForIt(t *testing.T) {
	const base = `
processes:
  db:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "print=%s,sleep"}
  api:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "print=api,sleep"}
    depends_on: [db]
    restart_with_dependencies: true
  cron:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "print=cron,sleep"}
    depends_on: [db]
`
	h := newHarness(t, strings.Replace(base, "%s", "v1", 1))
	res := h.start("api", "cron")
	pids := map[string]int{}
	for _, r := range res {
		pids[r.Name] = r.PID
	}
	h.load(strings.Replace(base, "%s", "v2", 1) + `
  added:
    command: {{exe}}
    env: {SUP_TEST_ROLE: child, SUP_TEST_CHILD: "print=added,sleep"}
`)
	plan, err := h.sup.Reload(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]ReloadAction{}
	for _, s := range plan {
		got[s.Name] = s.Action
	}
	want := map[string]ReloadAction{"db": ReloadRestart, "api": ReloadRestart, "cron": ReloadNone, "added": ReloadStart}
	for n, a := range want {
		if got[n] != a {
			t.Errorf("%s: %s, want %s (plan %+v)", n, got[n], a, plan)
		}
	}
	if st := h.status("api"); st.State != StateRunning || st.PID == pids["api"] {
		t.Errorf("api was not restarted with db: %+v", st)
	}
	if st := h.status("cron"); st.PID != pids["cron"] {
		t.Errorf("cron restarted without asking: %+v", st)
	}
	if st := h.status("added"); st.State != StateRunning {
		t.Errorf("added was not started: %+v", st)
	}
}
