package profile

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"amid/host/task"
	"amid/viewer/imageio"
)

// ErrRefused marks a case a trained model cannot read (see Admit).
var ErrRefused = errors.New("the model cannot read this case")

// spacingSlack is how far past the training spacings an input's spacing may lie before it
// is called unseen: 25 %, the step between neighbouring scanner protocols' slice spacings
// (1.0, 1.25, 1.5, 2.0 mm …), so a spacing one protocol step away passes silently.
const spacingSlack = 1.25

// intensitySamples is how many first-channel voxels the intensity check reads, as many as
// the fingerprint reads per case (sample).
const intensitySamples = 100000

// modalities are the DICOM Modality values each task modality accepts; a task modality
// not listed accepts any.
var modalities = map[string][]string{
	"CT": {"CT"}, "MR": {"MR"}, "MRI": {"MR"}, "US": {"US"}, "PT": {"PT"}, "PET": {"PT"},
	"XR": {"CR", "DX", "DR", "RG"},
}

// Admit checks one case given to a trained model (amid predict) against the model's task
// and the fingerprint of its training data. What the model cannot read (an unreadable
// image, a missing channel, a volume where it reads 2D images or a slice where it reads
// volumes, a DICOM series of another modality) is refused: an error wrapping ErrRefused,
// in one sentence. What it reads but never saw in training (a spacing or a median
// intensity outside the training range) gives a warning each. Neither names the case or
// its files, so both may go into an audit log.
func Admit(fp *Fingerprint, t *task.Task, c task.Case) ([]string, error) {
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, args...))
	}
	want := modalities[strings.ToUpper(t.Modality)]
	for i, s := range c.Series {
		if s == nil || len(want) == 0 {
			continue
		}
		found := false
		for _, m := range want {
			found = found || strings.EqualFold(s.Modality, m)
		}
		if !found {
			return nil, refuse("the model was trained on %s, and the DICOM series of image %d is %s", t.Modality, i+1, s.Modality)
		}
	}
	if len(c.Images) == 0 {
		return nil, refuse("the case has no image")
	}
	v, err := imageio.Read(c.Images[0])
	if err != nil {
		return nil, refuse("its first image cannot be read: %v", err)
	}
	if channels := len(c.Images); len(c.Images) == 1 && fp.Channels > 1 {
		channels = v.Dims[3]
		if channels != fp.Channels {
			return nil, refuse("the model reads %d channels, and the image has %d", fp.Channels, channels)
		}
	} else if fp.Channels > 0 && channels != fp.Channels {
		return nil, refuse("the model reads %d channels, and the case has %d images", fp.Channels, channels)
	}
	switch {
	case t.Dims == 2 && v.Dims[2] > 1:
		return nil, refuse("the model reads 2D images, and the image is a volume of %d slices", v.Dims[2])
	case t.Dims == 3 && v.Dims[2] == 1:
		return nil, refuse("the model reads volumes, and the image is one slice")
	}
	var warns []string
	axes := 3
	if t.Dims == 2 {
		axes = 2
	}
	sp := fp.SpacingRange()
	for a := range axes {
		lo, hi := sp[0][2-a], sp[1][2-a] // the range is (Z, Y, X)
		if x := v.Spacing[a]; len(fp.Cases) > 0 && (x < lo/spacingSlack || x > hi*spacingSlack) {
			warns = append(warns, fmt.Sprintf("the spacing along %c, %.4g mm, lies outside the training spacings, %.4g to %.4g mm", "XYZ"[a], x, lo, hi))
		}
	}
	if fp.Train > 0 {
		s := sample(v, intensitySamples)
		if m := percentile(s, 50); m < fp.Intensity[0] || m > fp.Intensity[2] {
			warns = append(warns, fmt.Sprintf("the median intensity, %.4g, lies outside the training images' 0.5 to 99.5 percentiles, %.4g to %.4g", m, fp.Intensity[0], fp.Intensity[2]))
		}
	}
	return warns, nil
}

// SpacingRange is the least and the most spacing along Z, Y and X over the training cases
// (zero without cases).
func (f *Fingerprint) SpacingRange() [2][3]float64 {
	if len(f.Cases) == 0 {
		return [2][3]float64{}
	}
	lo := [3]float64{math.Inf(1), math.Inf(1), math.Inf(1)}
	hi := [3]float64{math.Inf(-1), math.Inf(-1), math.Inf(-1)}
	for _, s := range f.Cases {
		for a := range 3 {
			lo[a], hi[a] = min(lo[a], s.Spacing[a]), max(hi[a], s.Spacing[a])
		}
	}
	return [2][3]float64{lo, hi}
}
