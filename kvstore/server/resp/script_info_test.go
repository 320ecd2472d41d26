//go:build unix

package resp_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// INFO memory counts the cached scripts, the functions and the libraries,
// as Redis 7.0 does (SCRIPT FLUSH empties the cache; FUNCTION FLUSH the
// libraries).
func TestInfo_CountsCachedScriptsFunctionsAndLibraries(t *testing.T) {
	c := goRedis(t, start(t, servertest.OpenDB(t), resp.Options{}))
	ctx := context.Background()
	field := func(name string) string {
		t.Helper()
		info, err := c.Info(ctx, "memory").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(l, name+":"); ok {
				return v
			}
		}
		return "(missing)"
	}
	for i := range 3 {
		if err := c.ScriptLoad(ctx, "return "+strconv.Itoa(i)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	lib := "#!lua name=mylib\nredis.register_function('f1', function() return 1 end)\nredis.register_function('f2', function() return 2 end)"
	if err := c.FunctionLoad(ctx, lib).Err(); err != nil {
		t.Fatal(err)
	}
	got := []string{field("number_of_cached_scripts"), field("number_of_functions"), field("number_of_libraries")}
	if strings.Join(got, " ") != "3 2 1" {
		t.Errorf("after 3 SCRIPT LOADs and a library of 2 functions: %v, want 3 2 1", got)
	}
	c.ScriptFlush(ctx)
	c.FunctionFlush(ctx)
	got = []string{field("number_of_cached_scripts"), field("number_of_functions"), field("number_of_libraries")}
	if strings.Join(got, " ") != "0 0 0" {
		t.Errorf("after SCRIPT FLUSH and FUNCTION FLUSH: %v, want 0 0 0", got)
	}
}
