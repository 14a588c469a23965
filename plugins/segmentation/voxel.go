package main

import (
	"bytes"
	"context"
	bin "encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"amid/plugins/engine"
	"amid/plugins/engine/ckpt"
	"amid/plugins/engine/data"
	"amid/plugins/engine/infer"
	"amid/plugins/internal/device"
	"amid/plugins/internal/forest"
	"amid/plugins/internal/training"
	"amid/plugins/metrics"
	"amid/plugins/protocol"
	"amid/plugins/sdk"
	"amid/plugins/segmentation/plan"
	"amid/plugins/taskspec"
)

// The forest lane (plan.LaneForest) classifies each voxel with a random forest
// (amid/plugins/internal/forest) from features of its neighbourhood and its position: the
// learner that pays off in seconds beside the U-Nets, which need thousands of steps. A
// step is one tree; trees are grown on voxels sampled once from the training cases (the
// same voxels for a given seed and cases, so that a resumed lane grows the trees an
// uninterrupted one would), and the checkpoint carries the whole forest (and its position
// prior) as its extra bytes, its weights in the training record. Prediction runs through
// infer.Segment like a network's: the same normalisation, grid and post-processing.
//
// Features, per image channel on the lane's grid (forestFeatures): the normalised value,
// its Gaussian smoothings at forestScales mm, the magnitude of its gradient at the finest
// scale and the difference of the finest and coarsest smoothings (local contrast, which
// an axis-aligned split cannot form from the two); then the voxel's position in the
// patient frame (the raw planes of data.Norm.Coords), which tells apart structures that
// look alike but lie in different places; and, with two training cases or more, each
// class's frequency near that position in the training cases (the position prior, an
// atlas: atlas.go).

// forestScales are the standard deviations in mm of the Gaussian smoothings a channel's
// features take: a voxel's immediate neighbourhood to a region of a few centimetres.
var forestScales = [...]float64{1, 2, 4, 8}

// forestPerChannel is the number of features of each image channel: its value, each
// smoothing, the gradient magnitude and the difference of smoothings.
const forestPerChannel = 1 + len(forestScales) + 2

// Defaults of the forest lane.
const (
	// defaultForestDepth bounds a tree: 2^16 leaves at most, so that a forest of 64
	// trees stays a few megabytes (5.6–6.6 MB on make bench-quality's inia19-quadrants).
	defaultForestDepth = 16
	// defaultForestSamples is the number of training voxels trees grow on, shared
	// evenly by the cases and classes (a class with fewer gives all it has).
	defaultForestSamples = 200_000
	// forestMinLeaf is the fewest samples a split leaves on either side.
	forestMinLeaf = 5
	// forestEpoch is the number of trees between checkpoints when the configuration's
	// steps_per_epoch does not say.
	forestEpoch = 8
	// forestProbe is the number of training samples whose error the forest reports as
	// its loss after each tree.
	forestProbe = 4096
)

// forestTrees is the forest lane's planned and largest number of trees: past a few dozen
// a random forest's votes change little (Breiman), while each tree costs its time in every
// prediction.
const forestTrees = 64

// forestTreeSeconds is about how long a tree of defaultForestSamples samples takes to
// grow on this machine's kind: 0.07 s on make bench-quality's tuning tasks on the 2-core
// development machine; the schedule measures the lane's own pace from its first round.
const forestTreeSeconds = 0.07

// forestMaxVoxels bounds the voxels of a case the forest works on (its features take 40
// bytes a voxel): a larger median case is predicted on a coarser grid.
const forestMaxVoxels = 16 << 20

// forestCandidate is the forest lane's configuration for a task whose first planned lane
// is l (its normalisation, labels and grid, coarsened when a median case has more than
// forestMaxVoxels voxels), and why.
func forestCandidate(l plan.Config, f plan.Fingerprint, sp *taskspec.Spec) (config, string, error) {
	c, err := fromPlan(l, f, sp)
	if err != nil {
		return c, "", err
	}
	c.Lane, c.Patch, c.Batch, c.Widths, c.Kernels, c.Pools, c.Slices, c.DeepSupervision = plan.LaneForest, [3]int{}, 0, nil, nil, nil, 0, false
	c.Steps, c.Epoch, c.Report, c.Coords = forestTrees, forestEpoch, 4, true
	c.MaxDepth, c.Samples = defaultForestDepth, defaultForestSamples
	why := fmt.Sprintf("forest: %d trees of depth ≤ %d on %d voxels sampled evenly from the cases and classes, features per channel the value, Gaussian smoothings at %v mm, the gradient and a difference of smoothings, the position in the patient frame and, with two training cases or more, each class's frequency near it in the training cases (an atlas)",
		forestTrees, defaultForestDepth, defaultForestSamples, forestScales)
	voxels := float64(l.MedianShape[0]) * float64(l.MedianShape[1]) * float64(l.MedianShape[2])
	if voxels > forestMaxVoxels && c.Spacing != ([3]float64{}) {
		k := math.Cbrt(voxels / forestMaxVoxels)
		for a := range c.Spacing {
			c.Spacing[a] *= k
		}
		why += fmt.Sprintf("; on a grid %.2g× coarser than the networks' (%v mm), as a median case of %.0f voxels is over %d", k, c.Spacing, voxels, forestMaxVoxels)
	}
	why += "; it learns in seconds and is the fast lane the networks must beat"
	return c, why, nil
}

// forestBytes is about the memory the forest lane c takes for a median case l's shape:
// its samples' features and codes, and one case's feature planes and class scores.
func forestBytes(c config, f plan.Fingerprint, l plan.Config) int64 {
	K := int64(len(c.Labels))
	F := int64(forestPerChannel*max(f.Channels, 1)+3) + K
	voxels := int64(1)
	for a, n := range l.MedianShape {
		if c.Spacing[a] > 0 && l.Spacing[a] > 0 {
			n = int(float64(n) * l.Spacing[a] / c.Spacing[a])
		}
		voxels *= int64(max(n, 1))
	}
	// The position prior: its counts by group of cases and its atlases (every case's,
	// and one leaving out each group), K float32 planes of at most atlasMaxCells each.
	prior := int64(atlasMaxCells) * K * 4 * (2*atlasGroups + 1)
	return int64(c.Samples)*F*5 + voxels*(F+K)*4 + prior
}

// forestFeatures are the features of every voxel of an image: planes holds the normalised
// image (ch channels, then the position planes of data.Norm.Coords when coords) on a grid
// of dims (X, Y, Z) voxels of spacing mm. The result is one plane of dims' voxels per
// feature.
func forestFeatures(planes []float32, dims [3]int, spacing [3]float64, ch int, coords bool) [][]float32 {
	S := dims[0] * dims[1] * dims[2]
	var out [][]float32
	for c := range ch {
		p := planes[c*S : (c+1)*S]
		smooth := make([][]float32, len(forestScales))
		var wg sync.WaitGroup
		for k, s := range forestScales {
			wg.Add(1)
			go func() {
				defer wg.Done()
				smooth[k] = gaussian(p, dims, spacing, s)
			}()
		}
		wg.Wait()
		out = append(out, p)
		out = append(out, smooth...)
		out = append(out, gradMag(smooth[0], dims, spacing))
		dog := make([]float32, S)
		for i := range dog {
			dog[i] = smooth[0][i] - smooth[len(smooth)-1][i]
		}
		out = append(out, dog)
	}
	if coords {
		per := 1 + 2*len(data.CoordPeriods) // the planes of one patient axis
		for a := range 3 {
			at := ch + a*per
			out = append(out, planes[at*S:(at+1)*S])
		}
	}
	return out
}

// gaussian is p smoothed by a Gaussian of sigma mm on a grid of spacing mm, separably, the
// edges clamped; an axis of one voxel, or whose voxels are much coarser than sigma, is left.
func gaussian(p []float32, dims [3]int, spacing [3]float64, sigma float64) []float32 {
	cur := append([]float32(nil), p...)
	tmp := make([]float32, len(p))
	stride := [3]int{1, dims[0], dims[0] * dims[1]}
	for a := range 3 {
		sv := sigma / max(spacing[a], 1e-6)
		if dims[a] < 2 || sv < 0.25 {
			continue
		}
		r := min(int(math.Ceil(3*sv)), dims[a]-1)
		w := make([]float32, 2*r+1)
		var sum float64
		for i := -r; i <= r; i++ {
			v := math.Exp(-float64(i*i) / (2 * sv * sv))
			w[i+r] = float32(v)
			sum += v
		}
		for i := range w {
			w[i] /= float32(sum)
		}
		n, st := dims[a], stride[a]
		for base := range len(p) {
			// base runs over the voxels whose coordinate on axis a is 0.
			if (base/st)%n != 0 {
				continue
			}
			for x := range n {
				var acc float32
				for k := -r; k <= r; k++ {
					y := min(max(x+k, 0), n-1)
					acc += w[k+r] * cur[base+y*st]
				}
				tmp[base+x*st] = acc
			}
		}
		cur, tmp = tmp, cur
	}
	return cur
}

// gradMag is the magnitude of p's gradient in units per mm, by central differences.
func gradMag(p []float32, dims [3]int, spacing [3]float64) []float32 {
	out := make([]float32, len(p))
	stride := [3]int{1, dims[0], dims[0] * dims[1]}
	for i := range p {
		xyz := [3]int{i % dims[0], (i / dims[0]) % dims[1], i / (dims[0] * dims[1])}
		var s float64
		for a := range 3 {
			if dims[a] < 2 {
				continue
			}
			lo, hi := max(xyz[a]-1, 0), min(xyz[a]+1, dims[a]-1)
			d := float64(p[i+(hi-xyz[a])*stride[a]]-p[i-(xyz[a]-lo)*stride[a]]) / (float64(hi-lo) * max(spacing[a], 1e-6))
			s += d * d
		}
		out[i] = float32(math.Sqrt(s))
	}
	return out
}

// forestData are the training voxels of a forest lane: their features (rows of F), their
// classes, and the number of voxels of each class in the cases they were drawn from; and
// the position prior of every training case (nil without positions or with one case).
type forestData struct {
	F      int
	X      []float32
	Y      []uint8
	Voxels []float64
	Atlas  *atlas
}

// sampleForest draws the training voxels of the cases of src: each case gives each class
// an equal share of samples voxels (a class with fewer gives all it has), drawn with
// (seed, case index), so that the same cases and seed give the same voxels.
func sampleForest(ctx context.Context, src []data.Source, c config, ch, samples int, seed int64) (*forestData, error) {
	K := len(c.Labels)
	d := &forestData{Voxels: make([]float64, K)}
	quota := max(samples/(len(src)*K), 1)
	var counts *atlasCounts
	if c.Coords && len(src) >= 2 {
		counts = newAtlasCounts(K, len(src))
	}
	var cases []int // the case of each sample
	for i, s := range src {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cs, ok := s.(*caseSource)
		if !ok {
			return nil, fmt.Errorf("case %s: not an image case", s.Name())
		}
		k, spacing, err := cs.load()
		if err != nil {
			return nil, err
		}
		feats := forestFeatures(k.Image, k.Dims, spacing, ch, c.Coords)
		d.F = len(feats)
		if counts != nil {
			counts.add(i, positions(k.Image, len(k.Label), ch), k.Label)
		}
		byClass := make([][]int32, K)
		for v, l := range k.Label {
			byClass[l] = append(byClass[l], int32(v))
			d.Voxels[l]++
		}
		r := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
		for cl, idx := range byClass {
			n := min(quota, len(idx))
			for j := range n { // a partial Fisher–Yates shuffle draws n of them
				t := j + r.IntN(len(idx)-j)
				idx[j], idx[t] = idx[t], idx[j]
				for _, f := range feats {
					d.X = append(d.X, f[idx[j]])
				}
				d.Y = append(d.Y, uint8(cl))
				cases = append(cases, i)
			}
		}
	}
	if len(d.Y) == 0 {
		return nil, errors.New("the training cases have no voxels")
	}
	if counts != nil {
		all, without, err := counts.build()
		if err != nil {
			return nil, err
		}
		d.Atlas = all
		d.withPrior(func(r int, pos [3]float64, out []float32) {
			without[cases[r]%len(without)].sample(pos, out)
		})
	}
	return d, nil
}

// withPrior appends to every sample r the K features prior gives at its position (the
// last three features, in units of data.CoordScale).
func (d *forestData) withPrior(prior func(r int, pos [3]float64, out []float32)) {
	K := d.Atlas.K
	F := d.F + K
	x := make([]float32, 0, len(d.Y)*F)
	v := make([]float32, K)
	for r := range d.Y {
		row := d.X[r*d.F : (r+1)*d.F]
		var pos [3]float64
		for a := range 3 {
			pos[a] = float64(row[d.F-3+a]) * data.CoordScale
		}
		prior(r, pos, v)
		x = append(append(x, row...), v...)
	}
	d.X, d.F = x, F
}

// forestModel is a trained forest with the weights that turn its votes, learnt on samples
// balanced over the classes, back into the classes' frequencies in the training voxels.
type forestModel struct {
	Forest  *forest.Forest
	Weights []float32
	// Atlas is the position prior of every training case, whose K classes' frequencies at
	// a voxel's position follow its features (nil: a forest without it).
	Atlas *atlas
}

// forestPriorPower is how far the votes are weighted back from the balanced samples to
// the classes' frequencies in the training voxels: 1 gives the posterior, which favours
// background where a voxel is in doubt; 0 the balanced votes, which favour the small
// classes. The middle was best on make bench-quality's tuning tasks (validation Dice of
// 32 trees on slabs 2 and 5, trained on 0, 3, 6 and 8): t1-tissue 0.781, 0.792 and 0.785
// at 0, 0.5 and 1; t1-brain 0.913, 0.930, 0.941; ch2-lobes 0.424, 0.433, 0.390.
const forestPriorPower = 0.5

// weights are the factors by class from the votes to the classes' frequencies
// (forestPriorPower of the ratio of the training voxels to the samples drawn).
func (d *forestData) weights() []float32 {
	drawn := make([]float64, len(d.Voxels))
	for _, y := range d.Y {
		drawn[y]++
	}
	w := make([]float32, len(d.Voxels))
	for k := range w {
		if drawn[k] > 0 {
			w[k] = float32(math.Pow(d.Voxels[k]/drawn[k], forestPriorPower))
		}
	}
	return w
}

// run is the class probabilities (K planes) of a normalised image on a grid of spacing mm:
// each voxel's features binned, the trees' votes weighted back to the training frequencies.
func (m *forestModel) run(planes []float32, dims [3]int, spacing [3]float64, ch int, coords bool) []float32 {
	feats := forestFeatures(planes, dims, spacing, ch, coords)
	S := dims[0] * dims[1] * dims[2]
	if m.Atlas != nil {
		feats = append(feats, m.Atlas.planes(positions(planes, S, ch))...)
	}
	F, K := len(feats), m.Forest.Classes
	prob := make([]float32, K*S)
	workers := runtime.GOMAXPROCS(0)
	const chunk = 4096
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			row := make([]float32, chunk*F)
			codes := make([]uint8, chunk*F)
			p := make([]float32, K)
			for lo := w * chunk; lo < S; lo += workers * chunk {
				n := min(chunk, S-lo)
				for i := range n {
					for f, plane := range feats {
						row[i*F+f] = plane[lo+i]
					}
				}
				m.Forest.Binner.Bin(row[:n*F], codes[:n*F])
				for i := range n {
					clear(p)
					m.Forest.Predict(codes[i*F:(i+1)*F], p)
					var sum float32
					for k := range p {
						p[k] *= m.Weights[k]
						sum += p[k]
					}
					for k := range p {
						if sum > 0 {
							prob[k*S+lo+i] = p[k] / sum
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	return prob
}

// readForest reads a forest lane's checkpoint: its record, and the forest its extra bytes
// encode (the payload's SHA-256 checked).
func readForest(path string) (*forestModel, saved, error) {
	man, st, err := ckpt.Read(path)
	if err != nil {
		return nil, saved{}, err
	}
	var s saved
	if err := json.Unmarshal(man.Train, &s); err != nil {
		return nil, s, fmt.Errorf("checkpoint %s: training configuration: %w", path, err)
	}
	f, at, err := decodeForest(st.Extra)
	if err != nil {
		return nil, s, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	switch {
	case f.Classes != len(s.Config.Labels) || len(s.ForestWeights) != f.Classes:
		return nil, s, fmt.Errorf("checkpoint %s: a forest of %d classes with %d weights for %d labels", path, f.Classes, len(s.ForestWeights), len(s.Config.Labels))
	case len(f.Trees) == 0:
		return nil, s, fmt.Errorf("checkpoint %s: a forest without trees", path)
	case at != nil && at.K != f.Classes:
		return nil, s, fmt.Errorf("checkpoint %s: a position prior of %d classes for a forest of %d", path, at.K, f.Classes)
	}
	return &forestModel{Forest: f, Weights: s.ForestWeights, Atlas: at}, s, nil
}

// forestAtlasMagic opens a forest checkpoint's extra bytes that hold a position prior
// after the forest: the magic, the forest's length (uint64, little-endian), the forest,
// the atlas. A forest without one is its encoding alone.
const forestAtlasMagic = "AMIDFA1\n"

// encode is the forest's extra bytes in its checkpoint.
func (m *forestModel) encode() ([]byte, error) {
	f, err := m.Forest.MarshalBinary()
	if err != nil || m.Atlas == nil {
		return f, err
	}
	a, err := m.Atlas.MarshalBinary()
	if err != nil {
		return nil, err
	}
	b := bin.LittleEndian.AppendUint64([]byte(forestAtlasMagic), uint64(len(f)))
	return append(append(b, f...), a...), nil
}

// decodeForest decodes what forestModel.encode wrote: the forest and its position prior
// (nil for a forest without one).
func decodeForest(b []byte) (*forest.Forest, *atlas, error) {
	f := &forest.Forest{}
	if !bytes.HasPrefix(b, []byte(forestAtlasMagic)) {
		return f, nil, f.UnmarshalBinary(b)
	}
	b = b[len(forestAtlasMagic):]
	if len(b) < 8 {
		return nil, nil, fmt.Errorf("%w: no length after %q", forest.ErrFormat, forestAtlasMagic[:len(forestAtlasMagic)-1])
	}
	n := bin.LittleEndian.Uint64(b)
	if b = b[8:]; n > uint64(len(b)) {
		return nil, nil, fmt.Errorf("%w: a forest of %d bytes in %d", forest.ErrFormat, n, len(b))
	}
	if err := f.UnmarshalBinary(b[:n]); err != nil {
		return nil, nil, err
	}
	at := &atlas{}
	if err := at.UnmarshalBinary(b[n:]); err != nil {
		return nil, nil, err
	}
	return f, at, nil
}

// forestCheckpoint says whether the checkpoint at path is a forest lane's (false when it
// cannot be read: loading it says why).
func forestCheckpoint(path string) bool {
	man, err := ckpt.ReadManifest(path)
	if err != nil {
		return false
	}
	var s saved
	return json.Unmarshal(man.Train, &s) == nil && s.Config.Lane == plan.LaneForest
}

// empty is the weightless model a forest checkpoint saves: its trees are the extra bytes.
type empty struct{}

func (empty) Params() []*engine.Param  { return nil }
func (empty) Buffers() []engine.Buffer { return nil }

// trainForest grows the forest lane's trees up to the request's last one, from the
// checkpoint it resumes (whose bins the new trees use), and validates the final
// checkpoint; it computes on the CPU.
func trainForest(ctx context.Context, req *protocol.TrainRequest, c config, src []data.Source, ch int, rule metrics.DiceRule, clock *sdk.Clock, prog *device.Progress) (*protocol.TrainResult, error) {
	d, err := sampleForest(ctx, src, c, ch, c.Samples, c.Seed)
	if err != nil {
		return nil, fmt.Errorf("segmentation train: %w", err)
	}
	m := &forestModel{Weights: d.weights(), Atlas: d.Atlas}
	if req.ResumeFrom != "" {
		old, _, err := readForest(req.ResumeFrom)
		if err != nil {
			return nil, fmt.Errorf("segmentation train: resume: %w", err)
		}
		if len(old.Forest.Binner.Edges) != d.F {
			return nil, fmt.Errorf("segmentation train: resume: checkpoint %s has %d features, the lane %d", req.ResumeFrom, len(old.Forest.Binner.Edges), d.F)
		}
		m.Forest = old.Forest
	} else {
		b, err := forest.NewBinner(d.X, d.F)
		if err != nil {
			return nil, fmt.Errorf("segmentation train: %w", err)
		}
		m.Forest = &forest.Forest{Classes: len(c.Labels), Binner: b}
	}
	codes := make([]uint8, len(d.X))
	m.Forest.Binner.Bin(d.X, codes)
	// The probe: evenly strided training samples whose votes add up tree by tree.
	n := len(d.Y)
	probe := make([]int, min(forestProbe, n))
	for i := range probe {
		probe[i] = i * n / len(probe)
	}
	votes := make([]float32, len(probe)*m.Forest.Classes)
	vote := func(t *forest.Forest) {
		for j, i := range probe {
			t.Predict(codes[i*d.F:(i+1)*d.F], votes[j*t.Classes:(j+1)*t.Classes])
		}
	}
	if len(m.Forest.Trees) > 0 {
		w := float32(len(m.Forest.Trees)) // Predict adds the mean over the trees
		vote(m.Forest)
		for i := range votes {
			votes[i] *= w
		}
	}
	cfg := forest.Config{MaxDepth: c.MaxDepth, MinLeaf: forestMinLeaf, Seed: uint64(c.Seed)}
	loss := make([]float64, 1)
	l := &training.Loop{
		Steps: c.Steps, Until: int(req.Until), LR: c.LR, Epoch: c.Epoch, Report: c.Report, Losses: []string{"train_error"},
		Dir: req.WorkDir, Record: saved{Config: c, Channels: ch, ForestWeights: m.Weights}, Model: empty{}, Send: prog.Send, Clock: clock,
		Extra: m.encode,
	}
	if err := l.Resume(req.ResumeFrom); err != nil {
		return nil, fmt.Errorf("segmentation train: resume: %w", err)
	}
	if l.At.Step != len(m.Forest.Trees) {
		return nil, fmt.Errorf("segmentation train: resume: checkpoint %s is at step %d with %d trees", req.ResumeFrom, l.At.Step, len(m.Forest.Trees))
	}
	l.Step = func(step int, _ float64) (int, []float64, error) {
		if err := m.Forest.Grow(codes, d.Y, cfg, step-1); err != nil {
			return 0, nil, err
		}
		one := &forest.Forest{Classes: m.Forest.Classes, Binner: m.Forest.Binner, Trees: m.Forest.Trees[step-1:]}
		vote(one)
		wrong := 0
		for j, i := range probe {
			v := votes[j*one.Classes : (j+1)*one.Classes]
			best := 0
			for k := range v {
				if v[k]*m.Weights[k] > v[best]*m.Weights[best] {
					best = k
				}
			}
			if best != int(d.Y[i]) {
				wrong++
			}
		}
		loss[0] = float64(wrong) / float64(len(probe))
		return 1, loss, nil
	}
	if err := l.Run(ctx); err != nil {
		return nil, fmt.Errorf("segmentation train: %w", err)
	}
	if l.At.Step == 0 && l.Stopped {
		// The time limit passed before the first tree (a round started late on a busy
		// machine): a forest without trees is no model, so it grows one whatever the
		// clock says, and the host judges that on validation.
		l.Clock, l.Until = nil, 1
		if err := l.Run(ctx); err != nil {
			return nil, fmt.Errorf("segmentation train: %w", err)
		}
	}
	final, err := l.Save(training.Final)
	if err != nil {
		return nil, fmt.Errorf("segmentation train: %w", err)
	}
	var val map[string]float64
	if len(req.Validation) > 0 {
		if val, err = validate(ctx, final, req.Validation, rule, prog.Log); err != nil {
			return nil, fmt.Errorf("segmentation train: validation: %w", err)
		}
	}
	return device.Result(device.CPU(), final, int64(l.At.Step), val)
}

// wireForest is the model of the forest checkpoint at path, whose record is s and
// configuration c: infer.Segment normalises and resamples the image as for a network, and
// the forest predicts the whole grid at once.
func wireForest(path string, s saved, c config) (*model, error) {
	f, _, err := readForest(path)
	if err != nil {
		return nil, err
	}
	opt := infer.Options{Channels: s.Channels, Classes: len(c.Labels)}
	m := &model{cfg: c, Model: infer.Model{Options: opt, Spacing: c.spacingXYZ(), Norm: c.norm(), Mapping: c.Labels}}
	m.Run = func(planes []float32, dims [3]int) ([]float32, error) {
		sp := m.Spacing
		if sp == ([3]float64{}) {
			sp = m.grid
		}
		prob := f.run(planes, dims, sp, s.Channels, c.Coords)
		if c.Post == postSmooth {
			smoothPlanes(prob, f.Forest.Classes, dims, sp, smoothMM)
		}
		return prob, nil
	}
	return m, nil
}

// smoothPlanes smooths each of the K planes of prob (dims voxels of spacing mm) by a
// Gaussian of sigma mm (gaussian), in place: the same linear filter, whose weights sum
// to 1 at every voxel, on every plane keeps each voxel's sum over the planes. At most
// GOMAXPROCS planes are smoothed at once, as each holds two copies of a plane.
func smoothPlanes(prob []float32, K int, dims [3]int, spacing [3]float64, sigma float64) {
	S := dims[0] * dims[1] * dims[2]
	var wg sync.WaitGroup
	slots := make(chan struct{}, runtime.GOMAXPROCS(0))
	for k := range K {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			copy(prob[k*S:(k+1)*S], gaussian(prob[k*S:(k+1)*S], dims, spacing, sigma))
		}()
	}
	wg.Wait()
}
