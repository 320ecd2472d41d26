package redisstore_test

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/devkit-go/devkit/ratelimit/redistest"
)

// needSortedSets are the tests that need the sorted sets of the store's
// lean-limit registry (ZADD, ZRANGE, ZREMRANGEBYSCORE, ZCARD).
const needSortedSets = `^(TestLeanAttack_|TestLean_ScriptAndGeneralDriverAgree|TestStaleLimitsOfAnEditedPolicyAreDropped)|^TestContract_RealRedis(_Pipelined)?$/^Reset_Info_Top$`

// TestMain runs the suite against redis-server and then once more (the
// same binary, re-executed) against a real `devkit kv serve`: StartRedis
// starts devkit kv in the second run ($DEVKIT_BIN, which make test sets;
// the tests of a cluster or Sentinel skip themselves there). Without
// $DEVKIT_BIN the second run is left out with a note, except under
// CI=true, where that fails. Benchmarks run once.
func TestMain(m *testing.M) {
	if redistest.AsDevkitKV() {
		os.Exit(m.Run())
	}
	code := m.Run()
	if f := flag.Lookup("test.bench"); code != 0 || (f != nil && f.Value.String() != "") {
		os.Exit(code)
	}
	if os.Getenv(redistest.DevkitBinEnv) == "" {
		msg := "redisstore tests against devkit kv left out: $" + redistest.DevkitBinEnv + " is not set (make test sets it to bin/devkit)"
		if os.Getenv("CI") == "true" {
			fmt.Fprintln(os.Stderr, msg+" (CI=true: they must run)")
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(0)
	}
	fmt.Fprintf(os.Stderr, "redisstore tests again, against devkit kv serve (%s=1)\n", redistest.AsDevkitEnv)
	args := os.Args[1:]
	missing, err := redistest.DevkitKVLacks(os.Getenv(redistest.DevkitBinEnv), "zadd", "zrange", "zremrangebyscore", "zcard")
	if err != nil {
		fmt.Fprintf(os.Stderr, "probing devkit kv: %v\n", err)
		os.Exit(1)
	}
	if len(missing) > 0 {
		// The store's registry of lean limits (reset, info, top) is a sorted
		// set: a devkit kv without sorted sets cannot pass these.
		fmt.Fprintf(os.Stderr, "devkit kv lacks %v: left out: %s\n", missing, needSortedSets)
		args = append(args, "-test.skip="+needSortedSets)
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), redistest.AsDevkitEnv+"=1")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "redisstore tests against devkit kv: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}
