//go:build unix

// Unix only: Debian's python3-redis at /usr/bin/python3 (see redispy_test.go).

package resp_test

import (
	"context"
	"crypto/sha1"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"reflect"
	"testing"
	"time"

	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

func TestRedisPy_RegisterScriptRunsWithEvalshaAndNoscriptFallback(t *testing.T) {
	requireRedisPy(t)
	host, port, _ := net.SplitHostPort(start(t, servertest.OpenDB(t), resp.Options{}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, systemPython, "testdata/redispy_scripts.py", host, port).Output()
	if err != nil {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		t.Fatalf("redis-py script: %v\n%s", err, stderr)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("script output %q: %v", out, err)
	}
	want := map[string]any{
		"first": []any{1.0, 2.0}, "second": []any{1.0, 1.0}, "cached": []any{true},
		"after_flush": []any{1.0, 0.0}, "drained": []any{0.0, 0.0}, "empty": []any{0.0, 0.0},
		"pipeline": []any{[]any{1.0, 1.0}, []any{1.0, 0.0}},
	}
	for k, w := range want {
		if !reflect.DeepEqual(got[k], w) {
			t.Errorf("%s = %#v, want %#v", k, got[k], w)
		}
	}
	sha := fmt.Sprintf("%x", sha1.Sum([]byte("return redis.call('incr', KEYS[1])")))
	if e, _ := got["error"].(string); e != "value is not an integer or out of range script: "+sha+", on @user_script:1." {
		t.Errorf("error = %q", got["error"])
	}
	if got["json"] != `{"n":7}` || got["status"] != "FINE" {
		t.Errorf("json = %v, status = %v", got["json"], got["status"])
	}
}
