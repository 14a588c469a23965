package infer

import (
	"math"
	"testing"
)

// TestConfidence: certain scores give 1, uniform ones 0, on the voxels called foreground
// (or every voxel when none is); scores are normalised per voxel first.
func TestConfidence(t *testing.T) {
	// Two classes, four voxels: planes [class 0 | class 1].
	certain := []float32{1, 1, 0, 0, 0, 0, 1, 1}
	if c := Confidence(certain, 2, []int32{0, 0, 1, 1}); math.Abs(c-1) > 1e-12 {
		t.Errorf("certain: %v", c)
	}
	// The background voxels are unsure, the foreground ones certain: foreground counts.
	mixed := []float32{0.5, 0.5, 0, 0, 0.5, 0.5, 3, 3} // scores 3, 3 normalise to 1
	if c := Confidence(mixed, 2, []int32{0, 0, 1, 1}); math.Abs(c-1) > 1e-12 {
		t.Errorf("sure foreground: %v", c)
	}
	// No foreground: every voxel counts; two of four uniform: half sure.
	if c := Confidence(mixed, 2, []int32{0, 0, 0, 0}); math.Abs(c-0.5) > 1e-12 {
		t.Errorf("no foreground: %v", c)
	}
	// p = (0.9, 0.1): 1 − H/ln 2 = 1 − 0.4690 = 0.5310 (H = −0.9 ln 0.9 − 0.1 ln 0.1).
	h := -(0.9*math.Log(0.9) + 0.1*math.Log(0.1)) / math.Log(2)
	if c := Confidence([]float32{0.1, 0.9}, 2, []int32{1}); math.Abs(c-(1-h)) > 1e-6 {
		t.Errorf("0.9: %v, want %v", c, 1-h)
	}
	if c := Confidence([]float32{0, 0}, 2, []int32{1}); c != 0 {
		t.Errorf("all-zero scores: %v, want 0", c)
	}
}
