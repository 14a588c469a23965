package plan

import (
	"fmt"
	"slices"
)

// LowResFactor is how much coarser the 3d_lowres lane's grid is than the target spacing
// on the axes it coarsens: a patch of the same voxels covers LowResFactor³ times the
// anatomy (nnU-Net raises the spacing in steps of 1 % until the patch covers a quarter of
// the median image; one factor of two keeps the plan simple and the cost known).
const LowResFactor = 2

// LowRes plans nnU-Net's "3d_lowres" lane: the 3D lane on images resampled to
// LowResFactor times the target spacing on every axis whose median shape keeps at least
// 4·MinPoolEdge voxels there, so that a patch sees the anatomy around it at a price the
// time allows. It returns nil when the data are 2D or no axis is large enough to coarsen.
func LowRes(f Fingerprint, b Budget) (*Config, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	sp, why := targetSpacing(f)
	med := MedianShape(f, sp)
	if med[0] <= 1 {
		return nil, nil
	}
	low, coarse := sp, []string{}
	for a := range 3 {
		if med[a] >= 4*MinPoolEdge*LowResFactor/2 {
			low[a] *= LowResFactor
			coarse = append(coarse, axisName[a])
		}
	}
	if low == sp {
		return nil, nil
	}
	c, total := baseConfig(f, low, why)
	c.Rationale = slices.Insert(c.Rationale, 1, fmt.Sprintf("3d_lowres: spacing ×%d on %v (median shape %v there), %.4g×%.4g×%.4g mm", LowResFactor, coarse, med, low[0], low[1], low[2]))
	c.Lane, c.Slices = Lane3DLow, 1
	if err := fit(&c, f, b, c.MedianShape, total); err != nil {
		return nil, err
	}
	return &c, nil
}
