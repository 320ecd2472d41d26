package gateway

// LoopConns is the number of connections the event loops serve now (0
// with GoroutinePerConn): tests see a connection leave the loops.
func (s *Server) LoopConns() int {
	if s.clientSrv.loops == nil {
		return 0
	}
	return s.clientSrv.loops.count()
}
