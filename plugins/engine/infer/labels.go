package infer

import (
	"fmt"
	"math"

	"amid/viewer/volume"
)

// Argmax returns, per voxel of K planes of n voxels, the class with the highest score
// (the lowest class on ties).
func Argmax(prob []float32, K int) []int32 {
	n := len(prob) / K
	out := make([]int32, n)
	for i := range out {
		best := prob[i]
		for k := 1; k < K; k++ {
			if v := prob[k*n+i]; v > best {
				best, out[i] = v, int32(k)
			}
		}
	}
	return out
}

// Confidence is how sure K planes of class scores are of the class map lab, from 0 to 1:
// one minus the mean entropy of each voxel's scores (normalised to sum 1), divided by its
// largest value log K, over the voxels lab calls foreground (class other than 0), or over
// every voxel when there is none. A voxel whose scores are all zero counts as unsure.
func Confidence(prob []float32, K int, lab []int32) float64 {
	n := len(lab)
	if K < 2 || n == 0 || len(prob) != K*n {
		return 1
	}
	fg := false
	for _, k := range lab {
		if k != 0 {
			fg = true
			break
		}
	}
	var sum float64
	count := 0
	for i, k := range lab {
		if fg && k == 0 {
			continue
		}
		var total float64
		for c := range K {
			total += max(float64(prob[c*n+i]), 0)
		}
		h := math.Log(float64(K))
		if total > 0 {
			h = 0
			for c := range K {
				if p := max(float64(prob[c*n+i]), 0) / total; p > 0 {
					h -= p * math.Log(p)
				}
			}
		}
		sum += h
		count++
	}
	return 1 - sum/float64(count)/math.Log(float64(K))
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
