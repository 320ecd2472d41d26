//go:build unix

// Unix only: Debian's python3-redis at /usr/bin/python3 (see redispy_test.go).

package resp_test

import (
	"crypto/sha1"
	"fmt"
	"reflect"
	"testing"
)

func TestRedisPy_RegisterScriptRunsWithEvalshaAndNoscriptFallback(t *testing.T) {
	got := runRedisPy(t, "testdata/redispy_scripts.py")
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
