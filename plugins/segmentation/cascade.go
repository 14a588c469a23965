package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"

	"amid/plugins/engine"
	"amid/plugins/engine/ckpt"
	"amid/plugins/engine/data"
	"amid/plugins/sdk"
	"amid/plugins/segmentation/plan"
	"amid/viewer/volume"
)

// The 3d_cascade_fullres lane is nnU-Net's cascade: a 3d_lowres network segments the
// case at its coarse spacing; that segmentation, on the image's grid (the low-resolution
// scores resampled trilinearly, then the argmax: what the low-resolution lane predicts),
// is resampled to the full-resolution grid by the nearest voxel and becomes one-hot planes
// that the 3d_fullres network takes after the image's channels (and before the position
// planes). As in nnU-Net (its cascade trainer adds num_classes − 1 input channels), the
// planes are the foreground classes' alone: background is where none is set.
//
// Training reads the low-resolution segmentation of every training case once, at the
// start, with the network the configuration names (cascade.checkpoint). nnU-Net trains
// the cascade on out-of-fold predictions: each training case segmented by the one of
// five 3d_lowres fold models that did not see it, so that the full-resolution network
// learns from inputs as imperfect as those it will get. Here a cascade of fold k takes the
// 3d_lowres model trained on fold k's training cases (exploration's on fold 0; in a fold
// ensemble the host trains the 3d_lowres lane on each other fold first, amid/host/run), so
// neither network has seen the fold's validation cases; but there is no budget for the
// out-of-fold predictions within a fold, so the training cases are segmented by that
// model, which saw them: those inputs are better than on unseen cases, and the cascade may
// trust them more than it should; to temper that, each is degraded once as nnU-Net's
// cascade augmentation does ([degrade]). The validation cases are segmented the way Predict
// does (the cascade's own low-resolution network on the case), so the validation score is
// that of the model as it predicts.
//
// A cascade checkpoint carries the low-resolution network inside it ([withLowres]): its
// training record (saved.Lowres) and its weights, so that export, verify, reproduce and
// predict need the one file.

// cascadeRef names the trained 3d_lowres checkpoint of a cascade and its SHA-256.
type cascadeRef struct {
	Checkpoint string `json:"checkpoint"`
	SHA256     string `json:"sha256"`
}

// lowresPrefix names the low-resolution network's tensors inside a cascade checkpoint.
const lowresPrefix = "lowres/"

// withLowres is what a cascade checkpoint saves: the full-resolution network (its
// parameters, which the optimizer trains, and its buffers), then the low-resolution
// network's parameters and buffers as buffers named lowresPrefix+name: state the
// optimizer never sees, as batch norm's running statistics are. The checkpoint format is
// unchanged; loading into a withLowres of a built low-resolution network fills it.
type withLowres struct{ full, low ckpt.Model }

// Params implements ckpt.Model: the full-resolution network's alone.
func (w withLowres) Params() []*engine.Param { return w.full.Params() }

// Buffers implements ckpt.Model.
func (w withLowres) Buffers() []engine.Buffer {
	out := slices.Clone(w.full.Buffers())
	for _, p := range w.low.Params() {
		out = append(out, engine.Buffer{Name: lowresPrefix + p.Name, Data: p.Data})
	}
	for _, b := range w.low.Buffers() {
		out = append(out, engine.Buffer{Name: lowresPrefix + b.Name, Data: b.Data})
	}
	return out
}

// lowres is the trained 3d_lowres network a cascade lane builds on: its training record
// and its weights on the host.
type lowres struct {
	rec     saved
	weights *ckpt.Stored
}

// openLowres reads the 3d_lowres checkpoint ref names, after checking its SHA-256, and
// checks that it was trained for c's labels on images of ch channels.
func openLowres(ref *cascadeRef, c config, ch int) (*lowres, error) {
	sum, err := sdk.FileSHA256(ref.Checkpoint)
	if err != nil {
		return nil, fmt.Errorf("cascade: %w", err)
	}
	if sum != ref.SHA256 {
		return nil, fmt.Errorf("cascade: checkpoint %s has sha256 %s, the configuration says %s", ref.Checkpoint, sum, ref.SHA256)
	}
	man, w, err := ckpt.Read(ref.Checkpoint)
	if err != nil {
		return nil, fmt.Errorf("cascade: %w", err)
	}
	var s saved
	if err := json.Unmarshal(man.Train, &s); err != nil {
		return nil, fmt.Errorf("cascade: checkpoint %s: training configuration: %w", ref.Checkpoint, err)
	}
	switch {
	case s.Config.Lane != plan.Lane3DLow:
		return nil, fmt.Errorf("cascade: checkpoint %s is of lane %q, not %s", ref.Checkpoint, s.Config.Lane, plan.Lane3DLow)
	case !slices.Equal(s.Config.Labels, c.Labels):
		return nil, fmt.Errorf("cascade: checkpoint %s segments labels %v, the cascade %v", ref.Checkpoint, s.Config.Labels, c.Labels)
	case s.Channels != ch:
		return nil, fmt.Errorf("cascade: checkpoint %s takes %d image channels, the cascade's images have %d", ref.Checkpoint, s.Channels, ch)
	}
	if err := ckpt.SameArch(man.Arch, s.Config.net(s.Channels)); err != nil {
		return nil, fmt.Errorf("cascade: checkpoint %s: %w", ref.Checkpoint, err)
	}
	return &lowres{rec: s, weights: w}, nil
}

// classVolume is the class map cls of img's grid as a one-channel volume there (uint8, or
// uint16 beyond 256 classes), so that it resamples as a label map.
func classVolume(img *volume.Volume, cls []int32, k int) (*volume.Volume, error) {
	t := volume.Uint8
	if k > 256 {
		t = volume.Uint16
	}
	v, err := volume.New(t, [4]int{img.Dims[0], img.Dims[1], img.Dims[2], 1})
	if err != nil {
		return nil, err
	}
	v.Spacing, v.Origin, v.Direction = img.Spacing, img.Origin, img.Direction
	for i, c := range cls {
		v.SetIndex(i, float64(c))
	}
	return v, nil
}

// priorPlanes are the one-hot planes of the class map v (k classes) on the grid of the
// given spacing (X, Y, Z; zero or v's own keeps v's grid), resampled by the nearest voxel
// as the image is resampled there: k − 1 planes, class j ≥ 1 in plane j − 1.
func priorPlanes(v *volume.Volume, spacing [3]float64, k int) ([]float32, [3]int, error) {
	if spacing != [3]float64{} && spacing != v.Spacing {
		var err error
		if v, err = data.Resample(v, spacing, true); err != nil {
			return nil, [3]int{}, err
		}
	}
	n := v.NumVoxels()
	out := make([]float32, (k-1)*n)
	for i := range n {
		if j := int(v.AtIndex(i)); j > 0 && j < k {
			out[(j-1)*n+i] = 1
		}
	}
	return out, [3]int{v.Dims[0], v.Dims[1], v.Dims[2]}, nil
}

// insertPlanes is planes (of n voxels each) with extra's planes inserted after the first
// at: the image's channels, then the one-hot planes, then the position planes.
func insertPlanes(planes []float32, n, at int, extra []float32) []float32 {
	out := make([]float32, 0, len(planes)+len(extra))
	out = append(out, planes[:at*n]...)
	out = append(out, extra...)
	return append(out, planes[at*n:]...)
}

// Degradation of the training cases' low-resolution segmentations, after nnU-Net's
// cascade augmentation (a binary operator on each class's one-hot plane with probability
// 0.4, one connected component removed with probability 0.2 when it covers at most 15 %
// of the image): the full-resolution network learns not to copy its input, which the
// 3d_lowres model, having seen most training cases, gets better there than on new ones.
// nnU-Net draws it for every sample; here it is drawn once per case, from the seed and
// the case's index, so that a resumed run sees what an uninterrupted one would.
const (
	degradeMorph    = 0.4
	degradeRemove   = 0.2
	degradeMaxShare = 0.15
)

// degrade changes the class map cls of grid dims (k classes) in place: for each
// foreground class, with probability pMorph its mask dilates into the background or
// erodes into it by one voxel (6-neighbourhood), and with probability pRemove one of its
// 6-connected components covering at most degradeMaxShare of the grid, drawn at random,
// becomes background.
func degrade(cls []int32, dims [3]int, k int, r *rand.Rand, pMorph, pRemove float64) {
	for j := int32(1); j < int32(k); j++ {
		if r.Float64() < pMorph {
			morph(cls, dims, j, r.IntN(2) == 0)
		}
		if r.Float64() < pRemove {
			comps := components6(cls, dims, j)
			var small [][]int
			for _, c := range comps {
				if float64(len(c)) <= degradeMaxShare*float64(len(cls)) {
					small = append(small, c)
				}
			}
			if len(small) > 0 {
				for _, i := range small[r.IntN(len(small))] {
					cls[i] = 0
				}
			}
		}
	}
}

// neighbours6 calls f with the index of each of voxel i's 6 neighbours inside dims.
func neighbours6(i int, dims [3]int, f func(int)) {
	x, y, z := i%dims[0], i/dims[0]%dims[1], i/(dims[0]*dims[1])
	sxy := dims[0] * dims[1]
	if x > 0 {
		f(i - 1)
	}
	if x < dims[0]-1 {
		f(i + 1)
	}
	if y > 0 {
		f(i - dims[0])
	}
	if y < dims[1]-1 {
		f(i + dims[0])
	}
	if z > 0 {
		f(i - sxy)
	}
	if z < dims[2]-1 {
		f(i + sxy)
	}
}

// morph dilates class j of cls into the background (dilate) or erodes it into the
// background, by one voxel.
func morph(cls []int32, dims [3]int, j int32, dilate bool) {
	was := slices.Clone(cls)
	for i, c := range was {
		switch {
		case dilate && c == 0:
			neighbours6(i, dims, func(n int) {
				if was[n] == j {
					cls[i] = j
				}
			})
		case !dilate && c == j:
			neighbours6(i, dims, func(n int) {
				if was[n] != j {
					cls[i] = 0
				}
			})
		}
	}
}

// components6 are the 6-connected components of class j in cls, each as its voxels'
// indices, in the order of their first voxel.
func components6(cls []int32, dims [3]int, j int32) [][]int {
	seen := make([]bool, len(cls))
	var out [][]int
	for s, c := range cls {
		if c != j || seen[s] {
			continue
		}
		comp := []int{s}
		seen[s] = true
		for q := 0; q < len(comp); q++ {
			neighbours6(comp[q], dims, func(n int) {
				if !seen[n] && cls[n] == j {
					seen[n] = true
					comp = append(comp, n)
				}
			})
		}
		out = append(out, comp)
	}
	return out
}
