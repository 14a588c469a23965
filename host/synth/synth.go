// Package synth generates images shaped like real medical data, for AMID's bundled sample
// study, its demo task and tests: the right dims, spacing, value ranges, label layouts and
// noise, deterministic for a seed. Every generator is pure Go and licence-clean.
package synth

import (
	"math"
	"math/rand/v2"

	"amid/viewer/volume"
)

// Head CT label values.
const (
	Background  = 0
	SoftTissue  = 1 // scalp and other soft tissue
	Bone        = 2 // skull
	Brain       = 3 // parenchyma
	Ventricle   = 4 // CSF in the lateral ventricles
	Haemorrhage = 5 // a hyperdense lesion
)

// HeadCTLabels names the label values of HeadCT.
var HeadCTLabels = map[int]string{
	Background: "background", SoftTissue: "soft tissue", Bone: "bone",
	Brain: "brain", Ventricle: "ventricle", Haemorrhage: "haemorrhage",
}

// HeadCT returns a CT-like head volume in Hounsfield units (int16) and its label map
// (uint8) on the same grid. Dims are x, y, z; spacing in mm. The head is an ellipsoid
// about 150×185×140 mm (a typical adult head) centred in the field of view: air −1000 HU,
// scalp 40 HU, skull 700–1500 HU, brain 30–38 HU, ventricles 5 HU, a haemorrhage 65 HU
// whose position and radius vary with the seed, plus Gaussian noise of 6 HU, as on a
// soft-tissue reconstruction kernel.
func HeadCT(seed uint64, dims [3]int, spacing [3]float64) (ct, labels *volume.Volume, err error) {
	ct, err = volume.New(volume.Int16, [4]int{dims[0], dims[1], dims[2], 1})
	if err != nil {
		return nil, nil, err
	}
	labels, err = volume.New(volume.Uint8, [4]int{dims[0], dims[1], dims[2], 1})
	if err != nil {
		return nil, nil, err
	}
	var origin [3]float64
	for i := range origin {
		origin[i] = -0.5 * float64(dims[i]-1) * spacing[i] // field of view centred on 0
	}
	for _, v := range []*volume.Volume{ct, labels} {
		v.Spacing, v.Origin = spacing, origin
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	// Lesion: radius 6–12 mm, inside one hemisphere, away from the midline.
	side := 1.0
	if rng.IntN(2) == 0 {
		side = -1
	}
	lc := [3]float64{side * (20 + 15*rng.Float64()), -20 + 40*rng.Float64(), -10 + 30*rng.Float64()}
	lr := 6 + 6*rng.Float64()
	hu := ct.Data.([]int16)
	lab := labels.Data.([]uint8)
	i := 0
	for z := 0; z < dims[2]; z++ {
		for y := 0; y < dims[1]; y++ {
			for x := 0; x < dims[0]; x++ {
				p := [3]float64{origin[0] + float64(x)*spacing[0], origin[1] + float64(y)*spacing[1], origin[2] + float64(z)*spacing[2]}
				l, v := headTissue(p, lc, lr)
				v += 6 * rng.NormFloat64()
				hu[i] = int16(math.Round(math.Max(-1024, math.Min(3071, v))))
				lab[i] = l
				i++
			}
		}
	}
	return ct, labels, nil
}

// headTissue classifies one point (mm, head centred on 0) and returns its label and mean HU.
func headTissue(p, lesion [3]float64, lesionR float64) (uint8, float64) {
	// Normalised radius in the outer ellipsoid (semi-axes 75, 92, 70 mm).
	r := func(a, b, c float64) float64 {
		return math.Sqrt(p[0]*p[0]/(a*a) + p[1]*p[1]/(b*b) + p[2]*p[2]/(c*c))
	}
	switch {
	case r(75, 92, 70) > 1:
		return Background, -1000
	case r(71, 88, 66) > 1:
		return SoftTissue, 40
	case r(65, 82, 60) > 1:
		// Skull: denser cortex at the outer and inner tables.
		return Bone, 700 + 800*math.Abs(math.Sin(7*r(65, 82, 60)))
	}
	d := math.Sqrt(sq(p[0]-lesion[0]) + sq(p[1]-lesion[1]) + sq(p[2]-lesion[2]))
	if d < lesionR {
		return Haemorrhage, 65
	}
	for _, s := range []float64{-1, 1} {
		q := [3]float64{p[0] - s*9, p[1] + 5, p[2] - 8}
		if sq(q[0]/6)+sq(q[1]/24)+sq(q[2]/10) < 1 {
			return Ventricle, 5
		}
	}
	// Grey matter near the surface is brighter than white matter inside.
	if r(65, 82, 60) > 0.85 {
		return Brain, 38
	}
	return Brain, 30
}

func sq(f float64) float64 { return f * f }

// SampleStudy is the bundled sample study (assets/sample): HeadCT on a 96×96×40 grid of
// 2.4×2.4×4 mm voxels, a 230 mm field of view over 160 mm like a coarse clinical head CT,
// with seed 1.
func SampleStudy() (ct, labels *volume.Volume, err error) {
	return HeadCT(1, [3]int{96, 96, 40}, [3]float64{2.4, 2.4, 4})
}
