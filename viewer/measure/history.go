package measure

// ForgetHistory drops the set's undo and redo history, so that what it holds now is where
// Undo stops: measurements read back from a review (Load) are not taken back by the first
// Undo.
func (s *Set) ForgetHistory() {
	s.undo, s.redo = nil, nil
	s.open, s.kept = false, false
}
