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
}

// Segment normalises img, resamples it to m.Spacing, predicts it with [Window] (or m.Run),
// resamples the class scores back onto img's grid (trilinear) and returns the label volume
// on img's grid (dims, spacing, origin, direction) with the task's values, and the scores
// as K planes of img's voxels.
func Segment(img *volume.Volume, m Model) (*volume.Volume, []float32, error) {
	if err := img.Validate(); err != nil {
		return nil, nil, fmt.Errorf("infer: %w", err)
	}
	if img.Dims[3] != m.Channels {
		return nil, nil, fmt.Errorf("infer: image has %d channels, the model %d", img.Dims[3], m.Channels)
	}
	if len(m.Mapping) != m.Classes {
		return nil, nil, fmt.Errorf("infer: mapping of %d labels for %d classes", len(m.Mapping), m.Classes)
	}
	planes, err := m.Norm.Apply(img)
	if err != nil {
		return nil, nil, fmt.Errorf("infer: %w", err)
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
			return nil, nil, fmt.Errorf("infer: %w", err)
		}
		work = [3]int{v.Dims[0], v.Dims[1], v.Dims[2]}
		planes = toPlanes(v.Data.([]float32), opt.Channels)
	}
	var prob []float32
	if m.Run != nil {
		prob, err = m.Run(planes, work)
	} else {
		prob, err = Window(planes, work, opt, m.Predict)
	}
	if err != nil {
		return nil, nil, err
	}
	if resample {
		v := &volume.Volume{Dims: [4]int{work[0], work[1], work[2], m.Classes}, Spacing: m.Spacing, Origin: img.Origin, Direction: img.Direction}
		v.Data = fromPlanesData(prob, m.Classes)
		if v, err = data.ResampleTo(v, dims, img.Spacing, false); err != nil {
			return nil, nil, fmt.Errorf("infer: %w", err)
		}
		prob = toPlanes(v.Data.([]float32), m.Classes)
	}
	lab, err := ToVolume(img, Argmax(prob, m.Classes), m.Mapping)
	if err != nil {
		return nil, nil, err
	}
	return lab, prob, nil
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
