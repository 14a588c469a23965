package infer

import (
	"fmt"

	"amid/plugins/engine/data"
	"amid/viewer/volume"
)

// Model is what [Segment] needs to run a trained network on an image.
type Model struct {
	Options
	// Spacing is the grid the network was trained on; zero runs on the image's own grid.
	Spacing [3]float64
	Norm    data.Norm
	// Mapping gives the task's label value of each class (Mapping[k] for class k).
	Mapping []int
	Predict Predict
	// Run, when not nil, runs the windows over a normalised image (the image's channels
	// and the position planes Norm adds) in place of Window with Predict: a NetWindow's
	// Run, which on a device keeps the image there.
	Run func(img []float32, dims [3]int) ([]float32, error)
	// Stream, when not nil, runs the windows as Run does but hands the result to a sink
	// slice by slice, as WindowTo does: a NetWindow's Stream. [Classes] prefers it to Run.
	Stream func(img []float32, dims [3]int, sink Sink) error
}

// Segment normalises img, resamples it to m.Spacing, predicts it with [Window] (or m.Run,
// or m.Stream), resamples the class scores back onto img's grid (trilinear) and returns
// the label volume on img's grid (dims, spacing, origin, direction) with the task's
// values, and the scores as K planes of img's voxels. [Classes] computes the same classes
// without holding the scores of the whole image.
func Segment(img *volume.Volume, m Model) (*volume.Volume, []float32, error) {
	prob, err := Scores(img, m)
	if err != nil {
		return nil, nil, err
	}
	lab, err := ToVolume(img, Argmax(prob, m.Classes), m.Mapping)
	if err != nil {
		return nil, nil, err
	}
	return lab, prob, nil
}

// Scores predicts img as [Segment] does and returns its class scores alone: K planes of
// img's voxels on img's grid, at each voxel the windows' Gaussian-weighted mean of the
// network's softmax (so they sum to 1 there), resampled back trilinearly when the network
// runs on another grid. They take 4 bytes per voxel and class; [Classes] does not hold them.
func Scores(img *volume.Volume, m Model) ([]float32, error) {
	p, err := prepare(img, m)
	if err != nil {
		return nil, err
	}
	return p.scores(m)
}

// Classes predicts img as [Segment] does and returns the class of every voxel on img's
// grid (Argmax of Segment's scores) and, when confidence is set, their [Confidence] (else
// 0), bit for bit Segment's. When img is on the network's grid (m.Spacing zero or img's),
// each slice's classes and entropies are taken as the windows finish it (m.Stream, or
// [WindowTo] with m.Predict), so that neither the class scores nor their sums of the
// whole image are held: the sums of a band of the patch's planes, one slice of scores and
// the class map are. With m.Run alone, or an image to resample, the whole scores are
// computed first as Segment does.
func Classes(img *volume.Volume, m Model, confidence bool) ([]int32, float64, error) {
	p, err := prepare(img, m)
	if err != nil {
		return nil, 0, err
	}
	K := m.Classes
	if p.resample || (m.Stream == nil && m.Run != nil) {
		prob, err := p.scores(m)
		if err != nil {
			return nil, 0, err
		}
		cls := Argmax(prob, K)
		if !confidence {
			return cls, 0, nil
		}
		return cls, Confidence(prob, K, cls), nil
	}
	XY := p.work[0] * p.work[1]
	cls := make([]int32, XY*p.work[2])
	var e entropy
	sink := func(z int, slice []float32) {
		c := cls[z*XY : (z+1)*XY]
		argmax(c, slice, K)
		if confidence && K >= 2 {
			e.add(slice, K, c)
		}
	}
	if m.Stream != nil {
		err = m.Stream(p.planes, p.work, sink)
	} else {
		err = WindowTo(p.planes, p.work, p.opt, m.Predict, sink)
	}
	if err != nil {
		return nil, 0, err
	}
	if !confidence {
		return cls, 0, nil
	}
	return cls, e.confidence(K), nil
}

// prepared is an image normalised (and resampled) for a model's windows.
type prepared struct {
	img      *volume.Volume
	planes   []float32 // the network's input planes on the work grid
	work     [3]int
	resample bool
	opt      Options // the windows' options: the model's, with the planes Norm gives
}

// prepare checks img against m, normalises it and resamples it to m.Spacing.
func prepare(img *volume.Volume, m Model) (*prepared, error) {
	if err := img.Validate(); err != nil {
		return nil, fmt.Errorf("infer: %w", err)
	}
	if img.Dims[3] != m.Channels {
		return nil, fmt.Errorf("infer: image has %d channels, the model %d", img.Dims[3], m.Channels)
	}
	if len(m.Mapping) != m.Classes {
		return nil, fmt.Errorf("infer: mapping of %d labels for %d classes", len(m.Mapping), m.Classes)
	}
	planes, err := m.Norm.Apply(img)
	if err != nil {
		return nil, fmt.Errorf("infer: %w", err)
	}
	// The network takes the image's channels and the position planes Norm may add.
	opt := m.Options
	opt.Channels = m.Norm.Planes(m.Channels)
	dims := [3]int{img.Dims[0], img.Dims[1], img.Dims[2]}
	resample := m.Spacing != [3]float64{} && m.Spacing != img.Spacing
	work := dims
	if resample {
		v := fromPlanes(img, planes, opt.Channels)
		if v, err = data.Resample(v, m.Spacing, false); err != nil {
			return nil, fmt.Errorf("infer: %w", err)
		}
		work = [3]int{v.Dims[0], v.Dims[1], v.Dims[2]}
		planes = toPlanes(v.Data.([]float32), opt.Channels)
	}
	return &prepared{img: img, planes: planes, work: work, resample: resample, opt: opt}, nil
}

// scores runs m's windows over p and returns the class scores on the image's grid.
func (p *prepared) scores(m Model) ([]float32, error) {
	var prob []float32
	var err error
	switch {
	case m.Run != nil:
		prob, err = m.Run(p.planes, p.work)
	case m.Stream != nil:
		err = m.Stream(p.planes, p.work, collect(&prob, p.work, m.Classes))
	default:
		prob, err = Window(p.planes, p.work, p.opt, m.Predict)
	}
	if err != nil {
		return nil, err
	}
	if !p.resample {
		return prob, nil
	}
	img := p.img
	dims := [3]int{img.Dims[0], img.Dims[1], img.Dims[2]}
	v := &volume.Volume{Dims: [4]int{p.work[0], p.work[1], p.work[2], m.Classes}, Spacing: m.Spacing, Origin: img.Origin, Direction: img.Direction}
	v.Data = fromPlanesData(prob, m.Classes)
	if v, err = data.ResampleTo(v, dims, img.Spacing, false); err != nil {
		return nil, fmt.Errorf("infer: %w", err)
	}
	return toPlanes(v.Data.([]float32), m.Classes), nil
}

// ScoreVolume is the class scores prob (K planes of img's voxels, as [Scores] returns
// them) as one float32 volume on img's grid of K channels, channel k class k's: a 4D NIfTI
// when written.
func ScoreVolume(img *volume.Volume, prob []float32, K int) (*volume.Volume, error) {
	if n := img.Dims[0] * img.Dims[1] * img.Dims[2]; K < 1 || len(prob) != K*n {
		return nil, fmt.Errorf("infer: %d scores for %d classes of %d voxels", len(prob), K, n)
	}
	return fromPlanes(img, prob, K), nil
}

// fromPlanes is a float32 volume on ref's grid holding C planes channels-fastest.
func fromPlanes(ref *volume.Volume, planes []float32, C int) *volume.Volume {
	v := &volume.Volume{Dims: ref.Dims, Spacing: ref.Spacing, Origin: ref.Origin, Direction: ref.Direction}
	v.Dims[3] = C
	v.Data = fromPlanesData(planes, C)
	return v
}

func fromPlanesData(planes []float32, C int) []float32 {
	n := len(planes) / C
	out := make([]float32, len(planes))
	for c := range C {
		for i, x := range planes[c*n : (c+1)*n] {
			out[i*C+c] = x
		}
	}
	return out
}

func toPlanes(d []float32, C int) []float32 {
	n := len(d) / C
	out := make([]float32, len(d))
	for i, x := range d {
		out[(i%C)*n+i/C] = x
	}
	return out
}
