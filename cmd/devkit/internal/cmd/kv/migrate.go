package kv

// devkit kv migrate copies every key, with its expiry, from a running
// server into Redis or Valkey. Invariant: a key is counted as copied only
// after the target acknowledged its SET; keys already expired at the
// source are skipped, and a key's expiry travels as an absolute time
// (SET ... PXAT), so the copy expires when the original would.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/devkit-go/devkit/cmd/devkit/internal/cmdutil"
	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/ratelimit/redisstore"
)

// MigrateOptions are the inputs of `devkit kv migrate`.
type MigrateOptions struct {
	ClientOptions
	// Redis connects to the target (the factory's RedisClient; redisstore.NewClient when nil).
	Redis    func(url string) (redis.UniversalClient, error)
	To       string
	Prefix   string
	PageSize int
	Workers  int
	JSON     bool
	// Progress forces the progress bar on or off; nil: only on a terminal.
	Progress *bool
}

// MigrateResult is what `devkit kv migrate --json` prints.
type MigrateResult struct {
	Target          string  `json:"target"`
	Keys            int64   `json:"keys"`
	Bytes           int64   `json:"bytes"`
	WithTTL         int64   `json:"with_ttl"`
	SkippedExpired  int64   `json:"skipped_expired"`
	DurationSeconds float64 `json:"duration_seconds"`
}

// NewCmdMigrate builds `devkit kv migrate`; runF, when not nil, receives the options instead of migrateRun.
func NewCmdMigrate(f *cmdutil.Factory, runF func(context.Context, *MigrateOptions) error) *cobra.Command {
	opts := &MigrateOptions{}
	cmd := &cobra.Command{
		Use:   "migrate --to URL",
		Short: "Copy every key, with its TTL, into Redis or Valkey (single node, sentinel or cluster)",
		Long: `Copy every key of the server (or those under --prefix) with its value and TTL into
Redis or Valkey, pipelined: per hash slot on a cluster, in pages on a single node
or behind sentinel. The target URL takes the forms devkit ratelimit takes:

  redis://[user:password@]host:port[/db]                 single node
  rediss://...                                           single node over TLS
  redis://host1:7000,host2:7001,host3:7002               cluster (any comma list)
  redis+cluster://host:7000                              cluster from one seed node
  redis+sentinel://[:password@]h1:26379,h2:26379/mymaster[/db]  sentinel

Existing keys at the target are overwritten; other keys there are left alone.
Expiries travel as absolute times (SET ... PXAT), keys already expired are
skipped. The server keeps serving while it runs: keys written during the copy
may or may not be copied, so stop writers (or run it again) for an exact cut-over.
A progress bar shows on a terminal; the summary gives keys, bytes and seconds.`,
		Example: `  devkit kv migrate --to redis://127.0.0.1:6379
  devkit kv migrate --to redis+cluster://10.0.0.5:7000 --json
  devkit kv migrate --prefix session: --to redis+sentinel://:pw@s1:26379,s2:26379/mymaster`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.bindClient(f, cmd)
			opts.Redis = f.RedisClient
			switch {
			case opts.To == "":
				return cmdutil.UsageErrorf("--to URL is required (redis://host:port, redis+cluster://..., redis+sentinel://.../master)")
			case opts.PageSize < 1 || opts.PageSize > 10000:
				return cmdutil.UsageErrorf("--page-size %d: want 1..10000", opts.PageSize)
			case opts.Workers < 1:
				return cmdutil.UsageErrorf("--workers %d: want 1 or more", opts.Workers)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return migrateRun(cmd.Context(), opts)
		},
	}
	addClientFlags(cmd, &opts.ClientOptions)
	opts.Timeout = 0 // the copy takes as long as the store is large; each round trip has its own bound
	cmd.Flags().Lookup("timeout").DefValue = "0s"
	cmd.Flags().StringVar(&opts.To, "to", "", "the target Redis or Valkey `URL`")
	cmd.Flags().StringVar(&opts.Prefix, "prefix", "", "only keys that start with `P`")
	cmd.Flags().IntVar(&opts.PageSize, "page-size", 1000, "keys read from the server per request")
	cmd.Flags().IntVar(&opts.Workers, "workers", 8, "pipelines in flight to the target at once (a cluster's slots in parallel)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the summary as JSON")
	return cmd
}

// maxPipelineBytes bounds the values in one pipeline, so that one round
// trip stays well inside the client's per-command timeout.
const maxPipelineBytes = 1 << 20

func migrateRun(ctx context.Context, opts *MigrateOptions) error {
	start := time.Now()
	src, ctx, cancel, err := opts.connect(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	defer src.Close()
	newClient := opts.Redis
	if newClient == nil {
		newClient = redisstore.NewClient
	}
	dst, err := newClient(opts.To)
	if err != nil {
		return cmdutil.UsageError(err)
	}
	defer dst.Close()
	target := redact(opts.To)
	pingCtx, pingCancel := context.WithTimeout(ctx, 5*time.Second)
	err = dst.Ping(pingCtx).Err()
	pingCancel()
	if err != nil {
		return fmt.Errorf("cannot reach the target %s: %w", target, err)
	}
	_, cluster := dst.(*redis.ClusterClient)
	total := int64(-1)
	if st, err := src.Stats(ctx); err == nil && opts.Prefix == "" {
		total = st.Keys
	}
	res := MigrateResult{Target: target}
	var copied atomic.Int64
	stopProgress := migrateProgress(opts.IO.ErrOut, opts.Progress, &copied, total)
	defer stopProgress()

	var after []byte
	for {
		entries, next, err := src.Entries(ctx, kvstore.ScanOptions{Prefix: []byte(opts.Prefix), After: after, Limit: opts.PageSize})
		if err != nil {
			return fmt.Errorf("read keys from the server: %w", err)
		}
		now := time.Now()
		live := entries[:0]
		for _, e := range entries {
			if !e.ExpiresAt.IsZero() && !e.ExpiresAt.After(now) {
				res.SkippedExpired++
				continue
			}
			live = append(live, e)
		}
		if err := copyPage(ctx, dst, live, cluster, opts.Workers); err != nil {
			return fmt.Errorf("copy into %s: %w (%d keys copied so far; running migrate again is safe)", target, err, res.Keys)
		}
		for _, e := range live {
			res.Keys++
			res.Bytes += int64(len(e.Key) + len(e.Value))
			if !e.ExpiresAt.IsZero() {
				res.WithTTL++
			}
		}
		copied.Store(res.Keys)
		if next == nil {
			break
		}
		after = next
	}
	stopProgress()
	res.DurationSeconds = time.Since(start).Seconds()
	if opts.JSON {
		return cmdutil.WriteJSON(opts.IO.Out, res)
	}
	_, err = fmt.Fprintf(opts.IO.Out, "copied %d keys (%d with a TTL, %s) to %s in %.1fs; skipped %d expired\n",
		res.Keys, res.WithTTL, humanBytes(res.Bytes), target, res.DurationSeconds, res.SkippedExpired)
	return err
}

// copyPage writes entries to the target: on a cluster one pipeline per
// hash slot (each goes to the slot's master in one round trip), else
// pipelines in page order; up to workers at once. Pipelines are cut at
// maxPipelineBytes.
func copyPage(ctx context.Context, dst redis.UniversalClient, entries []kvstore.Entry, cluster bool, workers int) error {
	var groups [][]kvstore.Entry
	if cluster {
		bySlot := map[uint16][]kvstore.Entry{}
		var order []uint16
		for _, e := range entries {
			s := hashSlot(e.Key)
			if _, ok := bySlot[s]; !ok {
				order = append(order, s)
			}
			bySlot[s] = append(bySlot[s], e)
		}
		for _, s := range order {
			groups = append(groups, splitBytes(bySlot[s])...)
		}
	} else {
		groups = splitBytes(entries)
	}
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for _, g := range groups {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := writeGroup(ctx, dst, g); err != nil {
				mu.Lock()
				firstErr = cmp(firstErr, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return firstErr
}

func cmp(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// splitBytes cuts entries into runs of at most maxPipelineBytes of data.
func splitBytes(entries []kvstore.Entry) [][]kvstore.Entry {
	var out [][]kvstore.Entry
	start, size := 0, 0
	for i, e := range entries {
		n := len(e.Key) + len(e.Value)
		if i > start && size+n > maxPipelineBytes {
			out = append(out, entries[start:i])
			start, size = i, 0
		}
		size += n
	}
	if start < len(entries) {
		out = append(out, entries[start:])
	}
	return out
}

// writeGroup sends one pipeline of SETs (a collection: DEL, then HSET,
// RPUSH, SADD or ZADD of its contents, then PEXPIREAT) and checks every reply.
func writeGroup(ctx context.Context, dst redis.UniversalClient, group []kvstore.Entry) error {
	var keys [][]byte // the key of each command queued
	cmds, err := dst.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, e := range group {
			n := p.Len()
			if e.Kind != kvstore.KindString {
				if err := queueCollection(ctx, p, e); err != nil {
					return err
				}
			} else if e.ExpiresAt.IsZero() {
				p.Set(ctx, string(e.Key), e.Value, 0)
			} else {
				p.SetArgs(ctx, string(e.Key), e.Value, redis.SetArgs{ExpireAt: e.ExpiresAt})
			}
			for range p.Len() - n {
				keys = append(keys, e.Key)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		for i, c := range cmds {
			if c.Err() != nil && i < len(keys) {
				return fmt.Errorf("%s %q: %w", c.Name(), keys[i], c.Err())
			}
		}
		return err
	}
	return nil
}

// queueCollection queues the commands that copy a collection: DEL, its
// contents in one command, its expiry.
func queueCollection(ctx context.Context, p redis.Pipeliner, e kvstore.Entry) error {
	u, err := kvstore.Unpack(e.Kind, e.Value)
	if err != nil {
		return fmt.Errorf("%s %q: %w", e.Kind, e.Key, err)
	}
	key := string(e.Key)
	p.Del(ctx, key)
	args := make([]any, len(u.Items))
	for i, it := range u.Items {
		args[i] = it
	}
	switch e.Kind {
	case kvstore.KindHash:
		p.HSet(ctx, key, args...)
	case kvstore.KindList:
		p.RPush(ctx, key, args...)
	case kvstore.KindSet:
		p.SAdd(ctx, key, args...)
	case kvstore.KindZSet:
		zs := make([]redis.Z, len(u.Members))
		for i, m := range u.Members {
			zs[i] = redis.Z{Score: m.Score, Member: m.Member}
		}
		p.ZAdd(ctx, key, zs...)
	}
	if !e.ExpiresAt.IsZero() {
		p.PExpireAt(ctx, key, e.ExpiresAt)
	}
	return nil
}

// hashSlot is Redis Cluster's slot of key: CRC16 (XMODEM) of the key, or
// of its hash tag (the part between the first { and the next }, when not
// empty), modulo 16384.
func hashSlot(key []byte) uint16 {
	if i := strings.IndexByte(string(key), '{'); i >= 0 {
		if j := strings.IndexByte(string(key[i+1:]), '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for _, b := range key {
		crc ^= uint16(b) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}

// redact hides a password in a URL for messages.
func redact(raw string) string {
	if at := strings.LastIndex(raw, "@"); at >= 0 {
		if scheme := strings.Index(raw, "://"); scheme >= 0 && scheme < at {
			return raw[:scheme+3] + "xxxxx@" + raw[at+1:]
		}
	}
	return raw
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// migrateProgress draws the copy's progress on w (see startProgressLine)
// and returns the function that stops and clears it.
func migrateProgress(w io.Writer, force *bool, done *atomic.Int64, total int64) func() {
	return startProgressLine(w, force, func(elapsed time.Duration) string {
		n := done.Load()
		rate := float64(n) / elapsed.Seconds()
		if total <= 0 {
			return fmt.Sprintf("%d keys  %.0f keys/s", n, rate)
		}
		frac := min(float64(n)/float64(total), 1)
		return fmt.Sprintf("%s %3.0f%%  %d/%d keys  %.0f keys/s", renderBar(frac), frac*100, n, total, rate)
	})
}
