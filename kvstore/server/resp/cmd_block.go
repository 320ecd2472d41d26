package resp

// wakeList tells clients blocked on key that a list there may have
// elements.
func (s *Server) wakeList(key []byte) {}
