package metrics

import (
	"fmt"
	"math"
)

// Box3D is an axis-aligned box of whole voxels: Location is the 0-indexed minimum corner
// and Size the extent along X, Y, Z, so it covers Location .. Location+Size−1 inclusive
// (the TopCoW ROI convention).
type Box3D struct {
	Size, Location [3]int
}

// The TopCoW detection ratios: IoU uses 0.5 and boundary IoU 0.2.
const (
	BoxIoURatio      = 0.5
	BoxBoundaryRatio = 0.2
)

// box3dSpan is an inclusive integer interval; empty when hi < lo.
type box3dSpan struct{ lo, hi int }

func (s box3dSpan) len() int64 {
	if s.hi < s.lo {
		return 0
	}
	return int64(s.hi - s.lo + 1)
}

func (s box3dSpan) and(t box3dSpan) box3dSpan {
	return box3dSpan{max(s.lo, t.lo), min(s.hi, t.hi)}
}

type box3dBox [3]box3dSpan

func (b box3dBox) volume() int64 { return b[0].len() * b[1].len() * b[2].len() }

func (b box3dBox) and(c box3dBox) box3dBox {
	return box3dBox{b[0].and(c[0]), b[1].and(c[1]), b[2].and(c[2])}
}

// box3dDistances is ceil(size·ratio) per axis, computed in float64 as Python's
// math.ceil(s * ratio) is (15·0.2 rounds up to 4).
func box3dDistances(b Box3D, ratio float64) [3]int {
	var d [3]int
	for i, s := range b.Size {
		d[i] = int(math.Ceil(float64(s) * ratio))
	}
	return d
}

// BoxIoUReX is the TopCoW detection metric as the ReX-MLE grader computes it: each box is
// dilated outward by ceil(size·ratio) voxels on every side and the voxel-set IoU of the
// two dilated boxes is returned (0 when both are empty). With ratio 0.5 this is the
// grader's "iou", with 0.2 its "boundary_iou". It is not the official metric (see
// BoxIoUTopCoW): for imperfect boxes the dilation inflates the score, e.g. in 1D [0,10)
// against [5,15) gives 0.6 instead of 1/3.
func BoxIoUReX(a, b Box3D, ratio float64) float64 {
	da, db := box3dDistances(a, ratio), box3dDistances(b, ratio)
	var ba, bb box3dBox
	for i := 0; i < 3; i++ {
		ba[i] = box3dSpan{a.Location[i] - da[i], a.Location[i] + a.Size[i] - 1 + da[i]}
		bb[i] = box3dSpan{b.Location[i] - db[i], b.Location[i] + b.Size[i] - 1 + db[i]}
	}
	inter := ba.and(bb).volume()
	union := ba.volume() + bb.volume() - inter
	if union <= 0 {
		return 0
	}
	return float64(inter) / float64(union)
}

// BoxIoUTopCoW is the official TopCoW boundary IoU (CoWBenchmark/TopCoW_Eval_Metrics,
// boundary_iou_from_tuple): each box is reduced to its inward shell of thickness
// ceil(size·ratio) per axis, and the voxel-set IoU of the two shells is returned. With
// ratio 0.5 the shell is the whole box, so this is the plain box IoU. Like the official
// code it refuses a zero thickness or one above ceil(size/2).
func BoxIoUTopCoW(a, b Box3D, ratio float64) (float64, error) {
	da, db := box3dDistances(a, ratio), box3dDistances(b, ratio)
	for _, c := range []struct {
		box Box3D
		d   [3]int
	}{{a, da}, {b, db}} {
		for i := 0; i < 3; i++ {
			if c.d[i] <= 0 {
				return 0, fmt.Errorf("metrics: box %v: boundary distance %v must be positive", c.box, c.d)
			}
			if c.d[i] > (c.box.Size[i]+1)/2 {
				return 0, fmt.Errorf("metrics: box %v: boundary distance %v exceeds half the size", c.box, c.d)
			}
		}
	}
	var ba, bb, ia, ib box3dBox
	for i := 0; i < 3; i++ {
		ba[i] = box3dSpan{a.Location[i], a.Location[i] + a.Size[i] - 1}
		bb[i] = box3dSpan{b.Location[i], b.Location[i] + b.Size[i] - 1}
		ia[i] = box3dSpan{ba[i].lo + da[i], ba[i].hi - da[i]}
		ib[i] = box3dSpan{bb[i].lo + db[i], bb[i].hi - db[i]}
	}
	// shell = box \ inner, inner ⊆ box
	sa := ba.volume() - ia.volume()
	sb := bb.volume() - ib.volume()
	inter := ba.and(bb).volume() - ia.and(bb).volume() - ba.and(ib).volume() + ia.and(ib).volume()
	union := sa + sb - inter
	if union <= 0 {
		return 0, nil
	}
	return float64(inter) / float64(union), nil
}
