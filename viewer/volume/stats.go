package volume

import (
	"math"
	"sort"
)

// Stats are summary figures of a volume's values over every element (all channels).
type Stats struct {
	Min, Max, Mean float64
	// NaN counts elements that are NaN (floating-point data only); they are left out of
	// Min, Max and Mean.
	NaN int
}

// Stats computes min, max and mean in one pass, in float64.
func (v *Volume) Stats() Stats {
	s := Stats{Min: math.Inf(1), Max: math.Inf(-1)}
	var sum float64
	n := 0
	add := func(f float64) {
		if f < s.Min {
			s.Min = f
		}
		if f > s.Max {
			s.Max = f
		}
		sum += f
		n++
	}
	switch d := v.Data.(type) {
	case []uint8:
		for _, x := range d {
			add(float64(x))
		}
	case []int16:
		for _, x := range d {
			add(float64(x))
		}
	case []float32:
		for _, x := range d {
			if x != x {
				s.NaN++
				continue
			}
			add(float64(x))
		}
	case []float64:
		for _, x := range d {
			if x != x {
				s.NaN++
				continue
			}
			add(x)
		}
	default:
		for i, l := 0, v.Len(); i < l; i++ {
			add(valueAt(v.Data, i))
		}
	}
	if n == 0 {
		return Stats{Min: math.NaN(), Max: math.NaN(), Mean: math.NaN(), NaN: s.NaN}
	}
	s.Mean = sum / float64(n)
	return s
}

// LabelCount is how many voxels carry one label value.
type LabelCount struct {
	Value int64 `json:"value"`
	Count int64 `json:"count"`
}

// Labels counts the voxels of each distinct value of an integer, single-channel volume. It
// returns ok=false when the volume is not integer, has several channels, or holds more
// than max distinct values. Counts are sorted by value.
func (v *Volume) Labels(max int) (counts []LabelCount, ok bool) {
	if !v.DType().IsInteger() || v.Dims[3] != 1 {
		return nil, false
	}
	switch d := v.Data.(type) {
	case []uint8:
		return denseLabels(d, 0, 256, max)
	case []int8:
		return denseLabels(d, -128, 256, max)
	case []uint16:
		return denseLabels(d, 0, 1<<16, max)
	case []int16:
		return denseLabels(d, -1<<15, 1<<16, max)
	}
	m := map[int64]int64{}
	for i, l := 0, v.Len(); i < l; i++ {
		m[int64(valueAt(v.Data, i))]++
		if len(m) > max {
			return nil, false
		}
	}
	for val, c := range m {
		counts = append(counts, LabelCount{val, c})
	}
	sort.Slice(counts, func(i, j int) bool { return counts[i].Value < counts[j].Value })
	return counts, true
}

func abs(f float64) float64  { return math.Abs(f) }
func sqrt(f float64) float64 { return math.Sqrt(f) }

// denseLabels counts small integer types in a table of n entries starting at value lo.
func denseLabels[T uint8 | int8 | uint16 | int16](d []T, lo, n, max int) ([]LabelCount, bool) {
	tab := make([]int64, n)
	for _, x := range d {
		tab[int(x)-lo]++
	}
	var counts []LabelCount
	for i, c := range tab {
		if c > 0 {
			if len(counts) == max {
				return nil, false
			}
			counts = append(counts, LabelCount{int64(i + lo), c})
		}
	}
	return counts, true
}
