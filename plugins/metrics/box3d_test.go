package metrics

import "testing"

func TestBox3DGolden(t *testing.T) {
	g := loadVolGolden(t)
	for i, b := range g.Boxes {
		a := Box3D{Size: b.A[0], Location: b.A[1]}
		c := Box3D{Size: b.B[0], Location: b.B[1]}
		if got := BoxIoUReX(a, c, BoxIoURatio); !closeTo(got, b.RexIoU) {
			t.Errorf("box %d: ReX IoU %v, set reference %v", i, got, b.RexIoU)
		}
		if got := BoxIoUReX(a, c, BoxBoundaryRatio); !closeTo(got, b.RexBoundaryIoU) {
			t.Errorf("box %d: ReX boundary IoU %v, set reference %v", i, got, b.RexBoundaryIoU)
		}
		got, err := BoxIoUTopCoW(a, c, BoxIoURatio)
		if err != nil || !closeTo(got, b.OfficialIoU) {
			t.Errorf("box %d: official IoU %v (%v), set reference %v", i, got, err, b.OfficialIoU)
		}
		got, err = BoxIoUTopCoW(a, c, BoxBoundaryRatio)
		if err != nil || !closeTo(got, b.OfficialBoundaryIo) {
			t.Errorf("box %d: official boundary IoU %v (%v), set reference %v", i, got, err, b.OfficialBoundaryIo)
		}
	}
}

func TestBox3DDilationExample(t *testing.T) {
	// The 1-D example of the rexmle notes, [0,10) against [5,15), made 3D with equal
	// y and z extents: true IoU 1/3, ReX's dilated IoU 0.6 in x alone.
	a := Box3D{Size: [3]int{10, 1, 1}, Location: [3]int{0, 0, 0}}
	b := Box3D{Size: [3]int{10, 1, 1}, Location: [3]int{5, 0, 0}}
	if got, _ := BoxIoUTopCoW(a, b, 0.5); !closeTo(got, 1.0/3) {
		t.Errorf("official IoU %v, want 1/3", got)
	}
	// dilation by ceil(0.5·10)=5 in x gives [-5,14] and [0,19] → 15/25; y and z grow
	// by ceil(0.5) = 1 on both boxes alike, so the ratio stays 0.6.
	if got := BoxIoUReX(a, b, 0.5); !closeTo(got, 0.6) {
		t.Errorf("ReX IoU %v, want 0.6", got)
	}
	zero := Box3D{Size: [3]int{0, 4, 4}}
	if _, err := BoxIoUTopCoW(zero, a, 0.2); err == nil {
		t.Error("zero-size box accepted by the official metric")
	}
}
