package cnn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"amid/plugins/engine/data"
)

// Intensity is an intensity normalisation. Kind "zscore" z-scores each image and channel
// with its own mean and deviation; "dataset" clips each channel to the training set's
// 0.5–99.5 percentiles and z-scores it with the clipped training values' mean and
// deviation, which keeps absolute levels (CT numbers, noise) comparable across images.
type Intensity struct {
	Kind string    `json:"kind"`
	Lo   []float64 `json:"lo,omitempty"`
	Hi   []float64 `json:"hi,omitempty"`
	Mean []float64 `json:"mean,omitempty"`
	Std  []float64 `json:"std,omitempty"`
}

// fitSamples bounds the values per channel a dataset fit looks at.
const fitSamples = 1 << 20

// minStd floors a deviation (nnU-Net's 1e-8).
const minStd = 1e-8

// FitIntensity returns the normalisation of the given kind fitted on imgs (all with the
// same channels); "zscore" needs no fit.
func FitIntensity(kind string, imgs []*Image) (Intensity, error) {
	n := Intensity{Kind: kind}
	switch kind {
	case "zscore":
		return n, nil
	case "dataset":
	default:
		return n, fmt.Errorf("intensity %q is not zscore or dataset", kind)
	}
	if len(imgs) == 0 {
		return n, fmt.Errorf("intensity: no images to fit")
	}
	C := imgs[0].C
	total := 0
	for _, im := range imgs {
		total += len(im.Data) / C
	}
	step := max(1, total/fitSamples)
	for c := range C {
		var vals []float64
		k := 0
		for _, im := range imgs {
			S := len(im.Data) / im.C
			for _, v := range im.Data[c*S : (c+1)*S] {
				if k%step == 0 {
					vals = append(vals, float64(v))
				}
				k++
			}
		}
		slices.Sort(vals)
		lo, hi := percentile(vals, 0.5), percentile(vals, 99.5)
		var s, q float64
		for _, v := range vals {
			s += min(max(v, lo), hi)
		}
		mean := s / float64(len(vals))
		for _, v := range vals {
			d := min(max(v, lo), hi) - mean
			q += d * d
		}
		n.Lo, n.Hi = append(n.Lo, lo), append(n.Hi, hi)
		n.Mean, n.Std = append(n.Mean, mean), append(n.Std, math.Sqrt(q/float64(len(vals))))
	}
	return n, nil
}

// percentile of sorted values with linear interpolation (numpy's default).
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	x := p / 100 * float64(len(sorted)-1)
	i := int(math.Floor(x))
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (x-float64(i))*(sorted[i+1]-sorted[i])
}

// Apply normalises im in place.
func (n Intensity) Apply(im *Image) error {
	S := len(im.Data) / im.C
	for c := range im.C {
		p := im.Data[c*S : (c+1)*S]
		switch n.Kind {
		case "zscore":
			var s, q float64
			for _, v := range p {
				s += float64(v)
			}
			mean := s / float64(S)
			for _, v := range p {
				d := float64(v) - mean
				q += d * d
			}
			sd := max(math.Sqrt(q/float64(S)), minStd)
			for i, v := range p {
				p[i] = float32((float64(v) - mean) / sd)
			}
		case "dataset":
			if c >= len(n.Lo) || len(n.Hi) != len(n.Lo) || len(n.Mean) != len(n.Lo) || len(n.Std) != len(n.Lo) {
				return fmt.Errorf("%w: the intensity normalisation knows %d channels, the image has %d", ErrImage, len(n.Lo), im.C)
			}
			lo, hi, mean, sd := n.Lo[c], n.Hi[c], n.Mean[c], max(n.Std[c], minStd)
			for i, v := range p {
				p[i] = float32((min(max(float64(v), lo), hi) - mean) / sd)
			}
		default:
			return fmt.Errorf("intensity %q is not zscore or dataset", n.Kind)
		}
	}
	return nil
}

// Fill copies the images idx of imgs into dst (the model's input, sample after sample) and
// applies aug to each with r; aug may be nil.
func Fill(dst []float32, imgs []*Image, idx []int, aug *data.Augment, r *rand.Rand) {
	off := 0
	for _, i := range idx {
		im := imgs[i]
		s := dst[off : off+len(im.Data)]
		copy(s, im.Data)
		if aug != nil {
			aug.Apply(r, im.Grid, im.C, s, nil)
		}
		off += len(im.Data)
	}
}
