package data

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"amid/viewer/volume"
)

// Modality selects the normalisation scheme.
type Modality int

const (
	// CT clips to the training set's foreground 0.5–99.5 percentiles and z-scores with the
	// foreground mean and standard deviation ([CTStats], fitted with [CTFit]).
	CT Modality = iota
	// MR z-scores each image and channel with the mean and deviation of its non-zero
	// voxels; zero voxels stay zero.
	MR
	// RGB scales each channel to [0,1] (÷255 for 8-bit data, min–max otherwise) and then
	// z-scores it per image.
	RGB
)

// CTStats are the global foreground intensity statistics of a CT training set.
type CTStats struct{ Lo, Hi, Mean, Std float64 }

// Norm is a normalisation: a modality and, for CT, the training set's statistics.
type Norm struct {
	Modality Modality
	CT       CTStats
	// Coords adds CoordChannels planes after the image's: each voxel's position in the
	// patient frame (L, P, S), so that a network can tell apart structures that look alike
	// but lie in different places (engine.UNetConfig.Position takes them).
	Coords bool
}

// CoordChannels is the number of planes Norm.Coords adds: for each patient axis (L, P, S)
// the position in units of CoordScale, and the sine and cosine of the position over
// periods of CoordPeriods, so that a linear map of them (a network's head) can favour a
// class in some places and not in others.
const CoordChannels = 3 * (1 + 2*len(CoordPeriods))

// CoordScale is the unit of the position planes in mm: a tenth of a metre keeps a body's
// positions within a few units, as normalised intensities are.
const CoordScale = 100.0

// CoordPeriods are the periods, in mm, of the position planes' sines and cosines: about a
// brain's lobe and a whole head or abdomen.
var CoordPeriods = [2]float64{64, 256}

// Planes is the number of planes Apply returns for an image of c channels.
func (n Norm) Planes(c int) int {
	if n.Coords {
		return c + CoordChannels
	}
	return c
}

// coords are the CoordChannels position planes of v's grid.
func coords(v *volume.Volume) []float32 {
	S := v.NumVoxels()
	out := make([]float32, CoordChannels*S)
	i := 0
	for z := range v.Dims[2] {
		for y := range v.Dims[1] {
			for x := range v.Dims[0] {
				w := v.VoxelToWorld([3]float64{float64(x), float64(y), float64(z)})
				k := 0
				for a := range 3 {
					out[k*S+i] = float32(w[a] / CoordScale)
					k++
					for _, p := range CoordPeriods {
						sn, cs := math.Sincos(2 * math.Pi * w[a] / p)
						out[k*S+i], out[(k+1)*S+i] = float32(sn), float32(cs)
						k += 2
					}
				}
				i++
			}
		}
	}
	return out
}

// ErrNonFinite is wrapped by errors about NaN or infinite voxels.
var ErrNonFinite = errors.New("non-finite voxel")

// ErrLabel marks errors of a case's label map: unreadable, on another grid than the image,
// or holding values outside the task's labels.
var ErrLabel = errors.New("label map")

const minStd = 1e-8 // nnU-Net's floor on the standard deviation

// Apply returns v normalised, as C planes of X·Y·Z float32 values (and the position planes
// after them with Coords). A NaN or infinite voxel
// is an error (wrapping ErrNonFinite) naming its position.
func (n Norm) Apply(v *volume.Volume) ([]float32, error) {
	f := v.Float32()
	S, C := v.NumVoxels(), v.Dims[3]
	for i, x := range f {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, fmt.Errorf("%w: value %v at voxel %d, channel %d", ErrNonFinite, x, i/C, i%C)
		}
	}
	out := f // one channel: f (a copy) is its plane
	if C > 1 {
		out = make([]float32, len(f))
		for i, x := range f { // channels-fastest to channel planes
			out[(i%C)*S+i/C] = x
		}
	}
	for ch := range C {
		p := out[ch*S : (ch+1)*S]
		switch n.Modality {
		case CT:
			s := n.CT
			if !(s.Std >= 0) || !(s.Hi >= s.Lo) {
				return nil, fmt.Errorf("CT statistics %+v are not fitted", s)
			}
			sd := max(s.Std, minStd)
			for i, x := range p {
				p[i] = float32((min(max(float64(x), s.Lo), s.Hi) - s.Mean) / sd)
			}
		case MR:
			var sum, sq float64
			cnt := 0
			for _, x := range p {
				if x != 0 {
					sum += float64(x)
					cnt++
				}
			}
			if cnt == 0 {
				continue
			}
			mean := sum / float64(cnt)
			for _, x := range p {
				if x != 0 {
					d := float64(x) - mean
					sq += d * d
				}
			}
			sd := max(math.Sqrt(sq/float64(cnt)), minStd)
			for i, x := range p {
				if x != 0 {
					p[i] = float32((float64(x) - mean) / sd)
				}
			}
		case RGB:
			lo, hi := 0.0, 255.0
			if v.DType() != volume.Uint8 {
				lo, hi = math.Inf(1), math.Inf(-1)
				for _, x := range p {
					lo, hi = min(lo, float64(x)), max(hi, float64(x))
				}
			}
			r := max(hi-lo, minStd)
			var sum, sq float64
			for i, x := range p {
				y := (float64(x) - lo) / r
				p[i] = float32(y)
				sum += y
			}
			mean := sum / float64(S)
			for _, x := range p {
				d := float64(x) - mean
				sq += d * d
			}
			sd := max(math.Sqrt(sq/float64(S)), minStd)
			for i, x := range p {
				p[i] = float32((float64(x) - mean) / sd)
			}
		default:
			return nil, fmt.Errorf("unknown modality %d", n.Modality)
		}
	}
	if n.Coords {
		out = append(out, coords(v)...)
	}
	return out, nil
}

// ctSamplesPerCase is how many foreground intensities each case contributes to the CT
// statistics, evenly strided (nnU-Net samples 10 000 per case).
const ctSamplesPerCase = 10000

// CTFit accumulates foreground intensities over a training set for [CTStats]. Only the
// first channel is used (CT is single-channel).
type CTFit struct{ vals []float64 }

// Add takes one case's image and label map (foreground: label value not 0).
func (f *CTFit) Add(name string, img, lab *volume.Volume) error {
	if img.NumVoxels() != lab.NumVoxels() {
		return fmt.Errorf("case %s: label has %d voxels, image %d: %w", name, lab.NumVoxels(), img.NumVoxels(), volume.ErrGeometry)
	}
	C := img.Dims[3]
	var fg []int
	for i := range lab.NumVoxels() {
		if lab.AtIndex(i*lab.Dims[3]) != 0 {
			fg = append(fg, i)
		}
	}
	step := max(1, (len(fg)+ctSamplesPerCase-1)/ctSamplesPerCase)
	for j := 0; j < len(fg); j += step {
		x := img.AtIndex(fg[j] * C)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("case %s: %w: value %v at voxel %d", name, ErrNonFinite, x, fg[j])
		}
		f.vals = append(f.vals, x)
	}
	return nil
}

// Stats returns the percentiles (linear interpolation, numpy's default), mean and
// standard deviation of the collected intensities.
func (f *CTFit) Stats() (CTStats, error) {
	n := len(f.vals)
	if n == 0 {
		return CTStats{}, errors.New("CT statistics: no foreground voxels in the training set")
	}
	v := slices.Clone(f.vals)
	slices.Sort(v)
	pct := func(p float64) float64 {
		r := p / 100 * float64(n-1)
		i := int(r)
		if i >= n-1 {
			return v[n-1]
		}
		return v[i] + (r-float64(i))*(v[i+1]-v[i])
	}
	var sum, sq float64
	for _, x := range v {
		sum += x
	}
	mean := sum / float64(n)
	for _, x := range v {
		sq += (x - mean) * (x - mean)
	}
	return CTStats{Lo: pct(0.5), Hi: pct(99.5), Mean: mean, Std: math.Sqrt(sq / float64(n))}, nil
}
