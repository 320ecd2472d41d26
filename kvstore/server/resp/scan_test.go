package resp_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
	"github.com/devkit-go/devkit/kvstore/server/resp"
)

// scanAll runs a whole SCAN from cursor with c, calling between after each
// page, and returns every key it saw and how many times.
func scanAll(t *testing.T, c *redis.Client, cursor uint64, count int64, between func(page int)) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for page := 0; ; page++ {
		keys, next, err := c.Scan(context.Background(), cursor, "", count).Result()
		if err != nil {
			t.Fatalf("SCAN %d (page %d): %v", cursor, page, err)
		}
		for _, k := range keys {
			seen[k]++
		}
		if next == 0 {
			return seen
		}
		cursor = next
		if between != nil {
			between(page)
		}
	}
}

// A cursor is held by the client, not by a server table: another client's
// 5,000 SCANs do not invalidate it, a cursor handed out before a restart
// resumes after it, and a key present for the whole scan is returned while
// keys are added and deleted around it. (Before, one 4,096-entry cursor
// table served every connection and was lost on restart: ERR invalid cursor.)
func TestScan_CursorsAreStatelessAndSurviveOthersAndRestarts(t *testing.T) {
	dir := t.TempDir()
	open := func() *kvstore.DB {
		db, err := kvstore.Open(dir, kvstore.Options{Logger: servertest.Logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	db := open()
	addr := start(t, db, resp.Options{})
	c, other := goRedis(t, addr), goRedis(t, addr)
	ctx := context.Background()
	const n = 3000
	for i := range n {
		if err := c.Set(ctx, fmt.Sprintf("key:%05d", i), "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}

	// Another client's 5,000 SCANs between two pages of ours.
	_, cursor, err := c.Scan(ctx, 0, "", 10).Result()
	if err != nil || cursor == 0 {
		t.Fatalf("first page: cursor %d, %v", cursor, err)
	}
	for range 5000 {
		if err := other.Scan(ctx, 0, "", 10).Err(); err != nil {
			t.Fatal(err)
		}
	}
	seen := scanAll(t, c, cursor, 100, nil)
	if len(seen) == 0 {
		t.Fatal("the cursor resumed to nothing")
	}

	// Keys present throughout are returned while others come and go; the
	// scan is also interrupted by a restart.
	kept := func(i int) bool { return i%3 != 0 }
	var cursorAtRestart uint64
	keys, cursorAtRestart, err := c.Scan(ctx, 0, "", 200).Result()
	if err != nil || cursorAtRestart == 0 {
		t.Fatalf("first page: cursor %d, %v", cursorAtRestart, err)
	}
	firstPage := map[string]int{}
	for _, k := range keys {
		firstPage[k]++
	}
	c.Close()
	other.Close()
	// A restart: a new engine over the same directory, a new server.
	db.Close()
	db = open()
	defer db.Close()
	c = goRedis(t, start(t, db, resp.Options{}))
	churn := 0
	seen = scanAll(t, c, cursorAtRestart, 50, func(page int) {
		// Delete some keys that are not kept, add new ones.
		for j := 0; j < 20; j++ {
			i := (page*20 + j) * 3 % n
			if !kept(i) {
				c.Del(ctx, fmt.Sprintf("key:%05d", i))
			}
			c.Set(ctx, fmt.Sprintf("new:%d:%d", page, j), "v", 0)
			churn++
		}
	})
	for k, m := range firstPage {
		seen[k] += m
	}
	for i := range n {
		k := fmt.Sprintf("key:%05d", i)
		if kept(i) && seen[k] == 0 {
			t.Fatalf("%s was present for the whole scan but not returned (%d keys seen, %d churned)", k, len(seen), churn)
		}
	}
	for k, m := range seen {
		if m > 1 {
			t.Fatalf("%s returned %d times", k, m)
		}
	}
}
