package plan

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"amid/plugins/engine"
)

// Plan returns the configurations that fit the budget: "2d" always, "2.5d" when the
// median image has at least Slices25D slices, "3d_fullres" when it has more than one. A
// lane that fits no patch is left out; when none fits, the error (ErrBudget) says what
// the smallest patch of each lane would need.
func Plan(f Fingerprint, b Budget) ([]Config, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	if b.Bytes <= 0 {
		return nil, fmt.Errorf("%w: budget of %d bytes", ErrBudget, b.Bytes)
	}
	sp, why := targetSpacing(f)
	base, total := baseConfig(f, sp, why)
	med := base.MedianShape
	type lane struct {
		name   string
		slices int
		start  [3]int
	}
	inPlane := [3]int{1, med[1], med[2]}
	lanes := []lane{{Lane2D, 1, inPlane}}
	if med[0] >= Slices25D {
		lanes = append(lanes, lane{Lane25D, Slices25D, inPlane})
	}
	if med[0] > 1 {
		lanes = append(lanes, lane{Lane3D, 1, med})
	}
	var out []Config
	var errs []error
	for _, l := range lanes {
		c := base
		c.Rationale = slices.Clone(base.Rationale)
		c.Lane, c.Slices = l.name, l.slices
		if err := fit(&c, f, b, l.start, total); err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// baseConfig is what every lane planned at spacing sp shares (why says how sp was
// chosen), and the dataset's voxels after resampling to sp.
func baseConfig(f Fingerprint, sp [3]float64, why string) (Config, float64) {
	med := MedianShape(f, sp)
	total := 0.0
	for _, c := range f.Cases {
		v := 1.0
		for a := range 3 {
			v *= float64(c.Dims[a]) * c.Spacing[a] / sp[a]
		}
		total += v
	}
	norm, nwhy := normalization(f)
	base := Config{Spacing: sp, MedianShape: med, Norm: norm, RareClasses: rare(f)}
	base.Rationale = []string{why, fmt.Sprintf("median shape after resampling: %v (D, H, W)", med)}
	if nwhy != "" {
		base.Rationale = append(base.Rationale, nwhy)
	}
	if len(base.RareClasses) > 0 {
		base.Rationale = append(base.Rationale, fmt.Sprintf("classes %v are under %g of the voxels: oversample foreground", base.RareClasses, rareFrequency))
	}
	return base, total
}

// fit chooses the patch, topology and batch of c: starting from start (the median
// shape), it shrinks the axis largest relative to the median shape by its pooling
// divisor until the patch is within MaxPatch3D (MaxPatch2D) voxels and MinBatch patches
// fit the budget, then raises the batch while it fits and
// covers at most MaxBatchFraction of the dataset's voxels.
func fit(c *Config, f Fingerprint, b Budget, start [3]int, total float64) error {
	limit, maxVox := MaxWidth3D, MaxPatch3D
	if start[0] == 1 {
		limit, maxVox = MaxWidth2D, MaxPatch2D
	}
	patch := start
	for {
		_, pools := Topology(patch, c.Spacing)
		d := divisor(pools)
		for a := range 3 {
			patch[a] = max(d[a], patch[a]/d[a]*d[a])
		}
		// Rounding down can change the topology: recompute on the rounded patch.
		kernels, pools := Topology(patch, c.Spacing)
		d = divisor(pools)
		vox := patch[0] * patch[1] * patch[2]
		net := engine.UNetConfig{
			In: f.Channels * c.Slices, Classes: f.Classes, Widths: widths(len(kernels), limit),
			Kernels: kernels, Pools: pools, Convs: 2, Norm: engine.Instance, Slope: 0.01,
		}
		var bytes int64 = -1 // not estimated while the patch exceeds the cap
		if vox <= maxVox {
			bytes = b.estimate(net, MinBatch, patch)
		}
		if bytes >= 0 && bytes <= b.Bytes {
			c.Patch, c.Net = patch, net
			c.Batch = b.batch(net, patch, MaxBatchFraction*total/float64(vox))
			c.Bytes = b.estimate(net, c.Batch, patch)
			c.Rationale = append(c.Rationale,
				fmt.Sprintf("patch %v from %v: shrunk on the axis largest relative to the median shape until within %d voxels and %d patches fit %.2f GiB, rounded to multiples of %v", patch, start, maxVox, MinBatch, float64(b.Bytes)/(1<<30), d),
				fmt.Sprintf("%d stages; kernels %v; pools %v (an axis is pooled while ≥ %d voxels and within %d× of the finest spacing)", len(kernels), kernels, pools, MinPoolEdge, MaxSpacingRatio),
				fmt.Sprintf("batch %d: the largest that fits the budget and covers ≤ %g%% of the dataset's voxels, at least %d; estimated %.2f GiB", c.Batch, 100*MaxBatchFraction, MinBatch, float64(c.Bytes)/(1<<30)))
			return nil
		}
		// Shrink the axis whose patch is largest relative to the median shape.
		axis, best := -1, 0.0
		for a := range 3 {
			if patch[a] <= MinPoolEdge || patch[a]-d[a] < 1 {
				continue
			}
			if r := float64(patch[a]) / float64(c.MedianShape[a]); r > best {
				axis, best = a, r
			}
		}
		if axis < 0 {
			if bytes < 0 {
				bytes = b.estimate(net, MinBatch, patch)
			}
			return fmt.Errorf("%w: lane %s needs %.1f MiB for a batch of %d patches of %v, budget is %.1f MiB",
				ErrBudget, c.Lane, float64(bytes)/(1<<20), MinBatch, patch, float64(b.Bytes)/(1<<20))
		}
		patch[axis] -= d[axis]
	}
}

// normalization is how the lanes scale f's images, and why when it is not the modality's
// usual scheme: CT's Hounsfield units and RGB's 8 bits have one scale; other images are
// z-scored each with its own statistics (nnU-Net's rule for MR, whose units differ by
// scanner), unless the training cases show one intensity scale (SharedScale).
func normalization(f Fingerprint) (Normalization, string) {
	switch strings.ToUpper(f.Modality) {
	case "CT":
		return Normalization{Scheme: "ct", Low: f.FGLow, High: f.FGHigh, Mean: f.FGMean, Std: f.FGStd}, ""
	case "RGB":
		return Normalization{Scheme: "rgb"}, ""
	}
	if r, ok := SharedScale(f); ok && f.FGStd > 0 && f.FGHigh > f.FGLow {
		return Normalization{Scheme: "global", Low: f.FGLow, High: f.FGHigh, Mean: f.FGMean, Std: f.FGStd},
			fmt.Sprintf("the training cases share one intensity scale (each class's mean differs at most %.2f× between cases, the median over classes, within %.2f×): every image is normalised with the training set's foreground statistics, as CT is, not with its own, which follow how much of each tissue its field of view holds", r, SharedScaleRatio)
	}
	return Normalization{Scheme: "zscore"}, ""
}

// SharedScaleRatio is the largest spread of a class's mean intensity between training
// cases (the largest case mean over the smallest, the median over the classes) of images
// on one scale. Per-image z-scoring is right for images whose units differ (MR from
// different scanners) and wrong for images that share them but not their content: slabs
// or partial views of one scan, whose own mean and deviation follow how much of each
// tissue they hold. On make bench-quality's tuning tasks (slabs of one scan each) the
// classes of ch2-lobes and t1-tissue spread 1.06–1.08× (t1-brain's one class 1.39×, as
// its slabs hold grey and white matter in different shares), and the same cases each
// scaled by a random factor from 0.4 to 2.5, as scanners differ, 2.53–2.77×. A forest of
// 32 trees on the forest lane's features (no position prior; scikit-learn, seed 1) with
// the training set's statistics rather than each image's own scored t1-tissue 0.786
// against 0.665, ch2-lobes 0.534 against 0.568 and t1-brain 0.917 against 0.913 on the
// test slabs; with the scaled cases the global statistics lost, 0.521 against 0.665
// and 0.334 against 0.569: the threshold lies between the two.
const SharedScaleRatio = 1.25

// sharedScaleVoxels is the fewest voxels of a class in a case for its mean to count.
const sharedScaleVoxels = 1000

// SharedScale reports whether f's training cases share one intensity scale: for each
// foreground class present (with sharedScaleVoxels or more) in two cases or more, the
// largest case mean over the smallest; their median at most SharedScaleRatio. It needs
// positive means and the host's per-case class statistics, and returns the median.
func SharedScale(f Fingerprint) (float64, bool) {
	var ratios []float64
	for k := 1; ; k++ {
		lo, hi, n, held := math.Inf(1), math.Inf(-1), 0, false
		for _, c := range f.Cases {
			if k >= len(c.ClassMeans) || k >= len(c.ClassVoxels) {
				continue
			}
			held = true
			if c.ClassVoxels[k] < sharedScaleVoxels {
				continue
			}
			lo, hi, n = min(lo, c.ClassMeans[k]), max(hi, c.ClassMeans[k]), n+1
		}
		if !held {
			break
		}
		if n < 2 {
			continue
		}
		if !(lo > 0) {
			return 0, false // units with a zero or negative mean: no ratio says their scale
		}
		ratios = append(ratios, hi/lo)
	}
	if len(ratios) == 0 {
		return 0, false
	}
	m := percentile(ratios, 0.5)
	return m, m <= SharedScaleRatio
}

// rareFrequency: foreground classes below this fraction of voxels are rare.
const rareFrequency = 1e-3

func rare(f Fingerprint) []int {
	var r []int
	for i, q := range f.ClassFrequency {
		if i > 0 && q < rareFrequency {
			r = append(r, i)
		}
	}
	return r
}
