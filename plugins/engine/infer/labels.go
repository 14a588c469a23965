package infer

import (
	"fmt"
	"math"

	"amid/viewer/volume"
)

// Argmax returns, per voxel of K planes of n voxels, the class with the highest score
// (the lowest class on ties).
func Argmax(prob []float32, K int) []int32 {
	out := make([]int32, len(prob)/K)
	argmax(out, prob, K)
	return out
}

// argmax writes Argmax of K planes of len(out) voxels into out.
func argmax(out []int32, prob []float32, K int) {
	n := len(out)
	for i := range out {
		best, c := prob[i], int32(0)
		for k := 1; k < K; k++ {
			if v := prob[k*n+i]; v > best {
				best, c = v, int32(k)
			}
		}
		out[i] = c
	}
}

// Confidence is how sure K planes of class scores are of the class map lab, from 0 to 1:
// one minus the mean entropy of each voxel's scores (normalised to sum 1), divided by its
// largest value log K, over the voxels lab calls foreground (class other than 0), or over
// every voxel when there is none. A voxel whose scores are all zero counts as unsure.
func Confidence(prob []float32, K int, lab []int32) float64 {
	if K < 2 || len(lab) == 0 || len(prob) != K*len(lab) {
		return 1
	}
	var e entropy
	e.add(prob, K, lab)
	return e.confidence(K)
}

// entropy sums the voxels' entropies for Confidence, in voxel order, over the foreground
// voxels and over all of them.
type entropy struct {
	fg, all   float64
	nfg, nall int
}

// add takes K planes of class scores of len(lab) voxels and their classes.
func (e *entropy) add(prob []float32, K int, lab []int32) {
	n := len(lab)
	logK := math.Log(float64(K))
	for i, k := range lab {
		var total float64
		for c := range K {
			total += max(float64(prob[c*n+i]), 0)
		}
		h := logK
		if total > 0 {
			h = 0
			for c := range K {
				if p := max(float64(prob[c*n+i]), 0) / total; p > 0 {
					h -= p * math.Log(p)
				}
			}
		}
		e.all += h
		e.nall++
		if k != 0 {
			e.fg += h
			e.nfg++
		}
	}
}

// confidence is Confidence of the voxels added.
func (e *entropy) confidence(K int) float64 {
	if K < 2 || e.nall == 0 {
		return 1
	}
	if e.nfg > 0 {
		return 1 - e.fg/float64(e.nfg)/math.Log(float64(K))
	}
	return 1 - e.all/float64(e.nall)/math.Log(float64(K))
}

// ToVolume returns the class map lab as a label volume on ref's grid (dims, spacing,
// origin, direction), each class k written as mapping[k], the task's value. The element
// type is the smallest of uint8, int16 and int32 that holds every mapped value.
func ToVolume(ref *volume.Volume, lab []int32, mapping []int) (*volume.Volume, error) {
	if len(lab) != ref.NumVoxels() {
		return nil, fmt.Errorf("infer: %d labels for a grid of %d voxels: %w", len(lab), ref.NumVoxels(), volume.ErrGeometry)
	}
	lo, hi := 0, 0
	for _, m := range mapping {
		lo, hi = min(lo, m), max(hi, m)
	}
	t := volume.Int32
	switch {
	case lo >= 0 && hi <= math.MaxUint8:
		t = volume.Uint8
	case lo >= math.MinInt16 && hi <= math.MaxInt16:
		t = volume.Int16
	case lo < math.MinInt32 || hi > math.MaxInt32:
		return nil, fmt.Errorf("infer: label values %d..%d do not fit in int32", lo, hi)
	}
	out, err := volume.New(t, [4]int{ref.Dims[0], ref.Dims[1], ref.Dims[2], 1})
	if err != nil {
		return nil, err
	}
	out.Spacing, out.Origin, out.Direction = ref.Spacing, ref.Origin, ref.Direction
	for i, k := range lab {
		if k < 0 || int(k) >= len(mapping) {
			return nil, fmt.Errorf("infer: class %d at voxel %d has no label value (mapping of %d classes)", k, i, len(mapping))
		}
		out.SetIndex(i, float64(mapping[k]))
	}
	return out, nil
}
