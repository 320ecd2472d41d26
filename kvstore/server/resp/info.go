package resp

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// compatVersion is the Redis version INFO reports: the protocol level we
// answer at (RESP2, no HELLO), which clients use to pick features.
const compatVersion = "5.0.0"

// info renders INFO's sections: server, clients, persistence, stats,
// keyspace (all by default, or those named).
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
	}
	if want("persistence") {
		section("Persistence")
		line("loading", 0)
		line("aof_enabled", 1)
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
			line("read_only_reason", strings.NewReplacer("\r", " ", "\n", " ").Replace(st.ReadOnlyReason))
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
	}
	if want("keyspace") {
		section("Keyspace")
		if st.Keys > 0 {
			fmt.Fprintf(&b, "db0:keys=%d,expires=0,avg_ttl=0\r\n", st.Keys)
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
