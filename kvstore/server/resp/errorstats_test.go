//go:build unix

package resp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// INFO errorstats and total_error_replies count every error reply a client
// was sent, once, by its code, as Redis 7.0 does (its unit/info and
// unit/scripting errorstats cases): a command's error inside a script
// counts where it was made and not again when the script raises or returns
// it; a script's own error counts at the EVAL; a rejected call counts in
// rejected_calls; CONFIG RESETSTAT empties them.
func TestErrorstats_CountEachErrorReplyOnceByCode(t *testing.T) {
	c := goRedis(t, start(t, servertest.OpenDB(t), resp.Options{}))
	ctx := context.Background()
	stats := func() map[string]string {
		t.Helper()
		info, err := c.Info(ctx, "errorstats", "stats", "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, l := range strings.Split(info, "\r\n") {
			if k, v, ok := strings.Cut(l, ":"); ok {
				m[k] = v
			}
		}
		return m
	}
	expect := func(step string, want map[string]string) {
		t.Helper()
		got := stats()
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q", step, k, got[k], v)
			}
		}
	}
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	expect("after RESETSTAT", map[string]string{"total_error_replies": "0", "errorstat_ERR": ""})

	c.Do(ctx, "asdf")                                               // unknown command: ERR
	c.HSet(ctx, "h", "f", "v")                                      //
	c.Get(ctx, "h")                                                 // WRONGTYPE
	c.EvalSha(ctx, "0123456789abcdef0123456789abcdef01234567", nil) // NOSCRIPT
	expect("plain errors", map[string]string{"total_error_replies": "3", "errorstat_ERR": "count=1",
		"errorstat_WRONGTYPE": "count=1", "errorstat_NOSCRIPT": "count=1"})

	// A command's error raised by redis.call: one error, the command's
	// and the script's call both failed.
	c.ConfigResetStat(ctx)
	if err := c.Eval(ctx, "return redis.call('select', 99)", nil).Err(); err == nil || !strings.HasPrefix(err.Error(), "ERR DB index is out of range") {
		t.Fatalf("EVAL of SELECT 99: %v", err)
	}
	expect("redis.call raising", map[string]string{"total_error_replies": "1", "errorstat_ERR": "count=1"})
	got := stats()
	if !strings.HasSuffix(got["cmdstat_select"], "rejected_calls=0,failed_calls=1") || !strings.HasSuffix(got["cmdstat_eval"], "rejected_calls=0,failed_calls=1") {
		t.Errorf("redis.call raising: select %q, eval %q, want each failed_calls=1", got["cmdstat_select"], got["cmdstat_eval"])
	}

	// redis.pcall's error, caught, then returned: still one.
	c.ConfigResetStat(ctx)
	if v, err := c.Eval(ctx, "local t = redis.pcall('select', 99) if t['err'] then return 1 end return 0", nil).Int(); err != nil || v != 1 {
		t.Fatalf("pcall caught: %v %v", v, err)
	}
	c.Eval(ctx, "return redis.pcall('select', 99)", nil)
	expect("pcall caught, then returned", map[string]string{"total_error_replies": "2", "errorstat_ERR": "count=2"})

	// A call the script layer refuses (wrong arity) counts once, as a
	// rejected call of the command.
	c.ConfigResetStat(ctx)
	c.Eval(ctx, "return redis.call('get')", nil)
	expect("refused call", map[string]string{"total_error_replies": "1", "errorstat_ERR": "count=1"})
	if got := stats()["cmdstat_get"]; !strings.HasSuffix(got, "rejected_calls=1,failed_calls=0") {
		t.Errorf("refused call: cmdstat_get %q, want rejected_calls=1", got)
	}

	// The script's own errors count at the EVAL: error_reply keeps its code.
	c.ConfigResetStat(ctx)
	c.Eval(ctx, "return redis.error_reply('MY_ERR_CODE custom msg')", nil)
	c.Eval(ctx, "return redis.error_reply('')", nil)
	c.Eval(ctx, "error('boom')", nil)
	expect("script's own errors", map[string]string{"total_error_replies": "3", "errorstat_MY_ERR_CODE": "count=1", "errorstat_ERR": "count=2"})

	c.ConfigResetStat(ctx)
	expect("RESETSTAT again", map[string]string{"total_error_replies": "0", "errorstat_ERR": "", "errorstat_MY_ERR_CODE": ""})
}

// A script can make any error code; errorstats keeps at most 128 of them
// (every error still counts in the total), so a loop of made-up codes does
// not grow the server's memory for good.
func TestErrorstats_CodesAreBounded(t *testing.T) {
	c := goRedis(t, start(t, servertest.OpenDB(t), resp.Options{}))
	ctx := context.Background()
	c.ConfigResetStat(ctx)
	for i := range 300 {
		c.Eval(ctx, fmt.Sprintf("return redis.error_reply('CODE%d x')", i), nil)
	}
	info, err := c.Info(ctx, "errorstats", "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(info, "errorstat_"); n != 128 {
		t.Errorf("%d errorstat lines after 300 codes, want 128", n)
	}
	if !strings.Contains(info, "total_error_replies:300\r\n") {
		t.Errorf("total_error_replies after 300 errors:\n%s", info)
	}
}
