package measure

import (
	"testing"

	"amid/viewer/volume"
)

// TestForgetHistory: after a Load and ForgetHistory, Undo has nothing to take back, and a
// later change is taken back to the loaded list.
func TestForgetHistory(t *testing.T) {
	vol, err := volume.New(volume.Int16, [4]int{8, 8, 2, 1})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := NewSet(vol, UnitNone)
	if err := s.Load([]Measurement{{Kind: Length, Axis: 2, Slice: 0, Points: [][3]float64{{1, 1, 0}, {4, 5, 0}}}}); err != nil {
		t.Fatal(err)
	}
	s.ForgetHistory()
	if s.Undo() || s.Len() != 1 {
		t.Fatalf("Undo after ForgetHistory took something back: %d left", s.Len())
	}
	if _, err := s.Add(Measurement{Kind: Probe, Axis: 2, Slice: 1, Points: [][3]float64{{2, 2, 0}}}); err != nil {
		t.Fatal(err)
	}
	if !s.Undo() || s.Len() != 1 || s.Undo() {
		t.Fatalf("Undo of a change after ForgetHistory: %d left", s.Len())
	}
}
