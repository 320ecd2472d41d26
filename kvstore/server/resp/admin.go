package resp

import (
	"context"
	"strconv"
	"strings"
	"time"
)

func cmdTime(c *call) {
	now := time.Now()
	c.w.bulkStrings(strconv.FormatInt(now.Unix(), 10), strconv.FormatInt(int64(now.Nanosecond()/1000), 10))
}

// lastSave is the time of the last snapshot this process wrote, or the
// server's start (as Redis reports the load time before any save).
func (s *Server) lastSave() time.Time {
	if t := s.store.Stats().LastSnapshot; !t.IsZero() {
		return t
	}
	return s.started
}

func cmdLastSave(c *call) { c.w.integer(c.s.lastSave().Unix()) }

// cmdSave writes a snapshot now. SAVE answers once it is durable; BGSAVE
// starts it and answers at once, as Redis does. A memory-only server has
// no data directory to save into: both answer an error (a Redis without
// persistence still writes dump.rdb into its working directory; a
// memory-only devkit promises to write no file at all).
func cmdSave(c *call) {
	s := c.s
	if s.store.MemoryOnly() {
		c.w.error(errMemoryOnlySave(c.cmd.name))
		return
	}
	if c.cmd.name == "bgsave" {
		if len(c.args) > 2 || (len(c.args) == 2 && !strings.EqualFold(string(c.args[1]), "SCHEDULE")) {
			c.fail(errSyntax)
			return
		}
		if !s.saving.CompareAndSwap(false, true) {
			c.w.error("ERR Background save already in progress")
			return
		}
		s.bg.Add(1)
		go func() {
			defer s.bg.Done()
			defer s.saving.Store(false)
			if _, err := s.store.Snapshot(context.Background()); err != nil {
				s.opts.Logger.Error("BGSAVE failed", "transport", "resp", "err", err)
			}
		}()
		c.w.simple("Background saving started")
		return
	}
	if !s.saving.CompareAndSwap(false, true) {
		c.w.error("ERR Background save already in progress")
		return
	}
	defer s.saving.Store(false)
	if _, err := s.store.Snapshot(context.Background()); err != nil {
		c.fail(err)
		return
	}
	c.w.ok()
}

// errMemoryOnlySave is SAVE's and BGSAVE's answer on a memory-only server.
func errMemoryOnlySave(cmd string) string {
	return "ERR " + strings.ToUpper(cmd) + " is not available: this server is memory-only and has no data directory to save into"
}

func cmdConfig(c *call) {
	w := c.w
	switch strings.ToUpper(string(c.args[1])) {
	case "GET":
		if len(c.args) < 3 {
			wrongArgs(w, "config|get")
			return
		}
		params := c.s.configParams()
		var out []string
		seen := map[string]bool{}
		for _, pat := range c.args[2:] {
			p := []byte(strings.ToLower(string(pat)))
			for _, kv := range params {
				if !seen[kv[0]] && globMatch(p, []byte(kv[0])) {
					seen[kv[0]] = true // once, whatever patterns match it (Redis 7.0)
					out = append(out, kv[0], kv[1])
				}
			}
		}
		w.mapLen(len(out) / 2)
		for _, s := range out {
			w.bulkString(s)
		}
	case "RESETSTAT":
		for i := range c.s.cmds.rows {
			st := c.s.cmds.rows[i].stats
			st.calls.Store(0)
			st.usec.Store(0)
			st.rejected.Store(0)
			st.failed.Store(0)
		}
		c.s.errors.reset()
		w.ok()
	case "SET":
		if len(c.args) < 4 || len(c.args)%2 != 0 {
			wrongArgs(w, "config|set")
			return
		}
		if c.s.scripts.configSet(c) || c.s.configSetNotify(c) {
			return
		}
		c.s.configSet(c, c.args[2:], c.s.configParams())
	case "REWRITE":
		w.error("ERR CONFIG REWRITE is not supported: devkit kv is configured with flags of devkit kv serve")
	default:
		unknownSubcommand(w, c.args[1], "CONFIG")
	}
}

// configParams are the read-only settings CONFIG GET reports, in Redis's names.
func (s *Server) configParams() [][2]string {
	fsync := map[string]string{"always": "always", "periodic": "everysec", "none": "no"}[s.store.SyncPolicy().String()]
	appendOnly := "yes"
	if s.store.MemoryOnly() {
		appendOnly = "no"
	}
	return append([][2]string{
		{"appendonly", appendOnly},
		{"appendfsync", fsync},
		{"save", ""},
		{"databases", "1"},
		{"maxclients", strconv.Itoa(s.opts.MaxConns)},
		{"timeout", strconv.Itoa(int(s.opts.IdleTimeout / time.Second))},
		{"proto-max-bulk-len", strconv.Itoa(s.opts.MaxBulkBytes)},
		{"maxmemory", "0"},
		{"busy-reply-threshold", strconv.FormatInt(s.scripts.busyAfterNanos.Load()/int64(time.Millisecond), 10)},
		{"lua-time-limit", strconv.FormatInt(s.scripts.busyAfterNanos.Load()/int64(time.Millisecond), 10)},
		{"maxmemory-policy", "noeviction"},
		{"notify-keyspace-events", notifyFlagsString(notifyClass(s.notifyFlags.Load()))},
		{"tracking-table-max-keys", strconv.FormatInt(s.tracker.maxKeys.Load(), 10)},
	}, s.encodings.params()...)
}
