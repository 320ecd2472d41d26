package resp

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// compatVersion is the Redis version INFO reports: the protocol level we
// answer at (RESP2: HELLO 3 is NOPROTO), which clients use to pick features.
const compatVersion = "5.0.0"

func cmdInfo(c *call) { c.w.verbatim(c.s.info(c.args[1:])) }

// info renders INFO's sections: server, clients, memory, persistence,
// stats, replication, cpu, errorstats, keyspace (all by default, or those
// named), and commandstats when named.
func (s *Server) info(sections [][]byte) string {
	want := func(name string) bool {
		if len(sections) == 0 {
			return true
		}
		for _, sec := range sections {
			switch strings.ToLower(string(sec)) {
			case name, "all", "everything", "default":
				return true
			}
		}
		return false
	}
	// commandstats is in all and everything, or named, never in the default.
	named := func(name string) bool {
		for _, sec := range sections {
			switch strings.ToLower(string(sec)) {
			case name, "all", "everything":
				return true
			}
		}
		return false
	}
	st := s.store.Stats()
	var b strings.Builder
	line := func(k string, v any) { fmt.Fprintf(&b, "%s:%v\r\n", k, v) }
	section := func(title string) {
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + title + "\r\n")
	}
	if want("server") {
		up := time.Since(s.started)
		section("Server")
		line("redis_version", compatVersion)
		line("server_name", "devkit-kv")
		line("redis_mode", "standalone")
		line("os", runtime.GOOS)
		line("arch_bits", 32<<(^uint(0)>>63))
		line("go_version", runtime.Version())
		line("process_id", os.Getpid())
		line("tcp_port", s.port.Load())
		line("uptime_in_seconds", int64(up.Seconds()))
		line("uptime_in_days", int64(up.Hours()/24))
	}
	if want("clients") {
		section("Clients")
		line("connected_clients", s.open.Load())
		line("maxclients", s.opts.MaxConns)
		line("blocked_clients", s.blocks.count.Load()) // in a blocking pop
		line("tracking_clients", s.tracker.n.Load())
	}
	if want("memory") {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		section("Memory")
		// used_memory is the data's memory (the engine's memtable), as in
		// Redis; the Go heap and the process's are reported beside it.
		line("used_memory", st.MemoryBytes)
		line("used_memory_human", humanBytes(uint64(st.MemoryBytes)))
		line("used_memory_heap", ms.HeapAlloc)
		line("used_memory_rss", ms.Sys-ms.HeapReleased)
		line("used_memory_rss_human", humanBytes(ms.Sys-ms.HeapReleased))
		line("used_memory_dataset", st.DataBytes)
		libs, funcs := s.scripts.functionCounts()
		line("number_of_cached_scripts", s.scripts.cachedScripts())
		line("number_of_functions", funcs)
		line("number_of_libraries", libs)
		line("maxmemory", 0)
		line("maxmemory_policy", "noeviction")
		line("mem_allocator", "go")
	}
	if want("persistence") {
		section("Persistence")
		line("loading", 0)
		line("rdb_bgsave_in_progress", boolInt(s.saving.Load()))
		line("rdb_last_save_time", s.lastSave().Unix())
		line("aof_enabled", boolInt(!st.MemoryOnly))
		line("memory_only", boolInt(st.MemoryOnly)) // nothing on disk: nothing survives the process
		status := "ok"
		if st.ReadOnly {
			status = "err"
		}
		line("aof_last_write_status", status)
		line("sync_policy", st.SyncPolicy)
		line("log_bytes", st.LogBytes)
		line("log_segments", st.LogSegments)
		line("fsyncs", st.Fsyncs)
		line("records_per_fsync", fmt.Sprintf("%.2f", st.RecordsPerFsync))
		line("compactions", st.Compactions)
		line("snapshot_seq", st.SnapshotSeq)
		if !st.LastSnapshot.IsZero() {
			line("last_snapshot_time", st.LastSnapshot.Unix())
		}
		line("read_only", boolInt(st.ReadOnly))
		if st.ReadOnly {
			line("read_only_reason", crlfToSpace.Replace(st.ReadOnlyReason))
		}
	}
	if want("stats") {
		section("Stats")
		line("total_connections_received", s.connections.Load())
		line("total_commands_processed", s.commands.Load())
		line("keyspace_hits", st.Hits)
		line("keyspace_misses", st.Misses)
		line("total_sets", st.Sets)
		line("total_deletes", st.Deletes)
		line("expired_keys", st.ExpiredKeys)
		line("evicted_keys", 0)
		channels, patterns, shard := s.pubsub.counts()
		line("pubsub_channels", channels)
		line("pubsub_patterns", patterns)
		line("pubsubshard_channels", shard)
		keys, items, prefixes := s.tracker.counts()
		line("tracking_total_keys", keys)
		line("tracking_total_items", items)
		line("tracking_total_prefixes", prefixes)
		line("unexpected_error_replies", 0) // replies to a master or replica: there are none
		line("total_error_replies", s.errors.total.Load())
	}
	if want("replication") {
		section("Replication")
		line("role", "master")
		line("connected_slaves", 0)
		// No replication stream: its offset stays 0, as on a Redis master
		// without replicas.
		line("master_repl_offset", 0)
		line("second_repl_offset", -1)
		line("repl_backlog_active", 0)
	}
	if want("cpu") {
		section("CPU")
		// The process's times (Go has no main thread to tell apart).
		if self, children, ok := cpuTimes(); ok {
			line("used_cpu_sys", fmt.Sprintf("%.6f", self[1].Seconds()))
			line("used_cpu_user", fmt.Sprintf("%.6f", self[0].Seconds()))
			line("used_cpu_sys_children", fmt.Sprintf("%.6f", children[1].Seconds()))
			line("used_cpu_user_children", fmt.Sprintf("%.6f", children[0].Seconds()))
		}
	}
	if named("commandstats") {
		section("Commandstats")
		for i := range s.cmds.rows {
			cmd := &s.cmds.rows[i]
			calls, usec := cmd.stats.calls.Load(), cmd.stats.usec.Load()
			rejected, failed := cmd.stats.rejected.Load(), cmd.stats.failed.Load()
			if calls == 0 && rejected == 0 {
				continue
			}
			perCall := 0.0
			if calls > 0 {
				perCall = float64(usec) / float64(calls)
			}
			fmt.Fprintf(&b, "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d\r\n",
				cmd.name, calls, usec, perCall, rejected, failed)
		}
	}
	if want("errorstats") {
		section("Errorstats")
		s.errors.section(&b)
	}
	if want("keyspace") {
		section("Keyspace")
		if st.Keys > 0 {
			fmt.Fprintf(&b, "db0:keys=%d,expires=%d,avg_ttl=%d\r\n", st.Keys, st.KeysWithTTL, int64(st.AvgTTLSeconds*1000))
		}
	}
	return b.String()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// humanBytes renders a byte count as Redis does (1.50M).
func humanBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}
