package resp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// openMemoryOnly opens a memory-only engine, closed at cleanup.
func openMemoryOnly(t *testing.T) *kvstore.DB {
	t.Helper()
	db, err := kvstore.Open("", kvstore.Options{MemoryOnly: true, Logger: servertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestMemoryOnly_AnswersLikeTheDurableServer sends the same commands of the
// string, keyspace and collection families to a durable server and a
// memory-only one and compares every answer.
func TestMemoryOnly_AnswersLikeTheDurableServer(t *testing.T) {
	durable := goRedis(t, start(t, servertest.OpenDB(t), resp.Options{AllowFlush: true}))
	memory := goRedis(t, start(t, openMemoryOnly(t), resp.Options{AllowFlush: true}))
	ctx := context.Background()
	script := [][]any{
		{"SET", "s", "v"}, {"GET", "s"}, {"APPEND", "s", "w"}, {"STRLEN", "s"}, {"SETRANGE", "s", 1, "xy"}, {"GETRANGE", "s", 0, -1},
		{"INCR", "n"}, {"INCRBY", "n", 41}, {"INCRBYFLOAT", "n", "0.5"}, {"MSET", "a", "1", "b", "2"}, {"MGET", "a", "b", "c"},
		{"SETNX", "a", "x"}, {"GETDEL", "b"}, {"SET", "t", "x", "EX", 100}, {"TTL", "t"}, {"PERSIST", "t"}, {"TTL", "t"},
		{"SETBIT", "bits", 7, 1}, {"BITCOUNT", "bits"}, {"RENAME", "a", "a2"}, {"COPY", "a2", "a3"}, {"EXISTS", "a", "a2", "a3"},
		{"TYPE", "s"}, {"DEL", "a3"}, {"DBSIZE"},
		{"HSET", "h", "f1", "1", "f2", "2"}, {"HGET", "h", "f1"}, {"HINCRBY", "h", "f1", 5}, {"HDEL", "h", "f2"}, {"HGETALL", "h"}, {"HLEN", "h"},
		{"LPUSH", "l", "a", "b", "c"}, {"RPUSH", "l", "z"}, {"LRANGE", "l", 0, -1}, {"LPOP", "l"}, {"RPOP", "l", 2}, {"LLEN", "l"}, {"LINDEX", "l", 0},
		{"SADD", "set", "x", "y", "z"}, {"SREM", "set", "y"}, {"SISMEMBER", "set", "x"}, {"SCARD", "set"}, {"SINTERSTORE", "set2", "set", "set"}, {"SCARD", "set2"},
		{"ZADD", "z", 1, "a", 2, "b", 3, "c"}, {"ZINCRBY", "z", 5, "a"}, {"ZRANGE", "z", 0, -1, "WITHSCORES"}, {"ZRANK", "z", "a"}, {"ZPOPMIN", "z"}, {"ZCARD", "z"},
		{"TYPE", "h"}, {"TYPE", "l"}, {"TYPE", "set"}, {"TYPE", "z"}, {"GET", "h"},
		{"MULTI"}, {"SET", "m", "1"}, {"INCR", "m"}, {"EXEC"},
		{"EVAL", "return redis.call('INCRBY', KEYS[1], ARGV[1])", 1, "m", 10},
		{"DBSIZE"}, {"FLUSHALL"}, {"DBSIZE"},
	}
	// MULTI must stay on one connection: each server gets one.
	dc, mc := durable.Conn(), memory.Conn()
	defer dc.Close()
	defer mc.Close()
	for _, cmd := range script {
		want, werr := dc.Do(ctx, cmd...).Result()
		got, gerr := mc.Do(ctx, cmd...).Result()
		if fmt.Sprint(got, gerr) != fmt.Sprint(want, werr) {
			t.Errorf("%v: memory-only answers %v, %v; durable %v, %v", cmd, got, gerr, want, werr)
		}
	}
}

func TestMemoryOnly_SaveIsRefusedAndInfoSaysTheMode(t *testing.T) {
	ctx := context.Background()
	memory := goRedis(t, start(t, openMemoryOnly(t), resp.Options{}))
	for _, cmd := range []string{"SAVE", "BGSAVE"} {
		err := memory.Do(ctx, cmd).Err()
		want := "ERR " + cmd + " is not available: this server is memory-only and has no data directory to save into"
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", cmd, err, want)
		}
	}
	info, err := memory.Info(ctx, "persistence").Result()
	if err != nil || !strings.Contains(info, "memory_only:1\r\n") || !strings.Contains(info, "aof_enabled:0\r\n") || !strings.Contains(info, "sync_policy:none\r\n") {
		t.Errorf("memory-only INFO persistence (%v):\n%s", err, info)
	}
	if cfg, err := memory.ConfigGet(ctx, "appendonly").Result(); err != nil || cfg["appendonly"] != "no" {
		t.Errorf("memory-only CONFIG GET appendonly = %v, %v", cfg, err)
	}

	// The durable default is unchanged.
	durable := goRedis(t, start(t, servertest.OpenDB(t), resp.Options{}))
	for _, cmd := range []string{"SAVE", "BGSAVE"} {
		if err := durable.Do(ctx, cmd).Err(); err != nil {
			t.Errorf("durable %s: %v", cmd, err)
		}
	}
	info, err = durable.Info(ctx, "persistence").Result()
	if err != nil || !strings.Contains(info, "memory_only:0\r\n") || !strings.Contains(info, "aof_enabled:1\r\n") {
		t.Errorf("durable INFO persistence (%v):\n%s", err, info)
	}
	if cfg, err := durable.ConfigGet(ctx, "appendonly").Result(); err != nil || cfg["appendonly"] != "yes" {
		t.Errorf("durable CONFIG GET appendonly = %v, %v", cfg, err)
	}
}
