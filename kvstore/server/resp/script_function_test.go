package resp_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

const counterLib = `#!lua name=counters
local function bump(keys, args)
  return redis.call('incrby', keys[1], args[1])
end
redis.register_function('bump', bump)
redis.register_function{function_name='read', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}}
`

// go-redis FunctionLoad/FCall/FCallRO; the libraries survive a restart of
// the server (the functions file), FUNCTION DUMP/RESTORE round-trips them,
// and FUNCTION FLUSH is persisted too.
func TestFunctions_GoRedisLoadCallAndTheyPersistAcrossRestarts(t *testing.T) {
	file := filepath.Join(t.TempDir(), "functions.json")
	db := servertest.OpenDB(t)
	c := goRedis(t, start(t, db, resp.Options{FunctionsFile: file}))
	ctx := context.Background()
	if name, err := c.FunctionLoad(ctx, counterLib).Result(); err != nil || name != "counters" {
		t.Fatalf("FUNCTION LOAD = %q, %v", name, err)
	}
	if v, err := c.FCall(ctx, "bump", []string{"hits"}, 5).Int64(); err != nil || v != 5 {
		t.Fatalf("FCALL bump = %d, %v", v, err)
	}
	if v, err := c.FCallRO(ctx, "read", []string{"hits"}).Text(); err != nil || v != "5" {
		t.Fatalf("FCALL_RO read = %q, %v", v, err)
	}
	if err := c.FCallRO(ctx, "bump", []string{"hits"}, 1).Err(); err == nil || !strings.Contains(err.Error(), "Can not execute a script with write flag using *_ro command.") {
		t.Fatalf("FCALL_RO of a writing function: %v", err)
	}
	dump, err := c.FunctionDump(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}

	// A second server over the same file: the library is back.
	c2 := goRedis(t, start(t, servertest.OpenDB(t), resp.Options{FunctionsFile: file}))
	if v, err := c2.FCall(ctx, "bump", []string{"hits"}, 2).Int64(); err != nil || v != 2 {
		t.Fatalf("FCALL after a restart = %d, %v", v, err)
	}
	libs, err := c2.FunctionList(ctx, redisFunctionListQuery()).Result()
	if err != nil || len(libs) != 1 || libs[0].Name != "counters" || len(libs[0].Functions) != 2 {
		t.Fatalf("FUNCTION LIST after a restart = %+v, %v", libs, err)
	}
	if err := c2.FunctionFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	c3 := goRedis(t, start(t, servertest.OpenDB(t), resp.Options{FunctionsFile: file}))
	if err := c3.FCall(ctx, "bump", []string{"hits"}, 1).Err(); err == nil || err.Error() != "ERR Function not found" {
		t.Fatalf("FCALL after FLUSH and a restart: %v", err)
	}
	if err := c3.FunctionRestore(ctx, dump).Err(); err != nil {
		t.Fatalf("FUNCTION RESTORE: %v", err)
	}
	if err := c3.FunctionRestore(ctx, dump).Err(); err == nil || err.Error() != "ERR Library counters already exists" {
		t.Fatalf("FUNCTION RESTORE again (APPEND): %v", err)
	}
	if v, err := c3.FCall(ctx, "bump", []string{"k"}, 1).Int64(); err != nil || v != 1 {
		t.Fatalf("FCALL after RESTORE = %d, %v", v, err)
	}
}

func redisFunctionListQuery() redis.FunctionListQuery { return redis.FunctionListQuery{} }
