package main

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"

	"amid/plugins/engine"
	"amid/plugins/engine/ckpt"
	"amid/plugins/engine/data"
	"amid/plugins/internal/cnn"
	"amid/plugins/internal/device"
	"amid/plugins/internal/forest"
	"amid/plugins/internal/imagefeat"
	"amid/plugins/internal/training"
	"amid/plugins/protocol"
	"amid/plugins/sdk"
	"amid/viewer/volume"
)

// The forest lane (laneForest) regresses the score on global features of each image
// (imagefeat.Of: sizes, intensity percentiles and histogram, the robust σ of high-pass
// residuals at several spacings, gradient magnitudes, a coarse layout) with a random forest
// (amid/plugins/internal/forest). That forest is a classifier, so the lane regresses by
// ordinal classification: the training scores are binned into at most Bins quantile
// classes (scoreBins), the forest learns the class of each training image, and a
// prediction is the mean of the classes' mean training scores weighted by the forest's
// class probabilities — regression on quantised targets as in Torgo and Gama, "Regression
// using classification algorithms" (Intelligent Data Analysis 1(4), 1997), read out as an
// expected value as in Rothe et al., "DEX: Deep EXpectation of apparent age from a single
// image" (ICCV workshops, 2015). The class means ascend with the classes, so a prediction
// is continuous in the votes and rises as they move to higher classes.
//
// A CNN needs thousands of steps to learn what a noise estimate reads off the pixels at
// once; the forest grows in seconds on the CPU, in one step (its candidate's MaxSteps),
// from the seed alone, and the host keeps whichever lane validates better.

// forestConfig are the forest lane's fields of a configuration (zero in the cnn lane's).
type forestConfig struct {
	Trees    int `json:"trees,omitempty"`
	MaxDepth int `json:"max_depth,omitempty"`
	MinLeaf  int `json:"min_leaf,omitempty"`
	Bins     int `json:"bins,omitempty"`
}

// Defaults of the forest lane.
const (
	// defaultTrees: Oshiro, Perez and Baranauskas ("How many trees in a random forest?",
	// MLDM 2012) found no significant gain past 128 trees on 29 data sets; twice that,
	// as a tree of a few hundred images grows in about a millisecond.
	defaultTrees = 256
	// defaultMaxDepth is the schema's most: the trees grow until min_leaf stops them,
	// which it does long before with a few hundred training images.
	defaultMaxDepth = 30
	// defaultMinLeaf is the regression forest's customary leaf size (Breiman's and R
	// randomForest's nodesize 5 for regression): a leaf's class frequencies average
	// several images, which smooths the expected score.
	defaultMinLeaf = 5
	// defaultBins is the most score classes. Quantising a uniformly spread score into K
	// equally full classes keeps a correlation of √(1 − 1/K²) with it (0.998 at 16), so
	// the metric's correlations lose almost nothing to the classes, and the prediction, a
	// mean over them, is continuous anyway; more classes would hold fewer images each (7
	// of the 115 training images a lane of ct-dose-iqa has beside its validation fold, at
	// 16), whose Gini splits then chase single images.
	defaultBins = 16
	// minPerBin is the fewest training images a score class is planned to hold (fewer
	// training images than minPerBin × bins get fewer classes): a tree's bootstrap sample
	// holds about 1 − 1/e of them, between 2 and 3 of 4, and with fewer a class would be
	// missing from many trees.
	minPerBin = 4
)

// checkForest checks the forest lane's configuration c, filling its defaults.
func (c config) checkForest() (config, error) {
	n := c.Net
	n.Seed = 0
	if !reflect.DeepEqual(n, cnn.Net{}) || c.Loss != (lossConfig{}) || c.Folds != 0 {
		return c, fmt.Errorf("iqa configuration: the forest lane has no network: only trees, max_depth, min_leaf, bins, seed and snap")
	}
	if c.Trees == 0 {
		c.Trees = defaultTrees
	}
	if c.MaxDepth == 0 {
		c.MaxDepth = defaultMaxDepth
	}
	if c.MinLeaf == 0 {
		c.MinLeaf = defaultMinLeaf
	}
	if c.Bins == 0 {
		c.Bins = defaultBins
	}
	if c.Snap == "" {
		c.Snap = "auto"
	}
	// The bounds are the schema's.
	switch {
	case c.Trees < 1 || c.Trees > 4096:
		return c, fmt.Errorf("iqa configuration: trees %d outside 1..4096", c.Trees)
	case c.MaxDepth < 1 || c.MaxDepth > 30:
		return c, fmt.Errorf("iqa configuration: max_depth %d outside 1..30", c.MaxDepth)
	case c.MinLeaf < 1 || c.MinLeaf > 1000:
		return c, fmt.Errorf("iqa configuration: min_leaf %d outside 1..1000", c.MinLeaf)
	case c.Bins < 2 || c.Bins > 64:
		return c, fmt.Errorf("iqa configuration: bins %d outside 2..64", c.Bins)
	case c.Snap != "auto" && c.Snap != "on" && c.Snap != "off":
		return c, fmt.Errorf("iqa configuration: snap %q is not auto, on or off", c.Snap)
	}
	return c, nil
}

// scoreBins are the score classes of a forest: Edges ascending between them, and each
// class's mean training score (Means, one more than Edges, ascending).
type scoreBins struct {
	Edges []float64 `json:"edges"`
	Means []float64 `json:"means"`
}

// newScoreBins bins scores into at most k classes of about equal counts (quantiles),
// fewer when the scores take fewer distinct values or there are fewer than minPerBin
// scores a class (one when every score is the same): each edge lies halfway between a
// quantile and the next smaller training score, so that equal scores share a class. It
// returns the bins and each score's class.
func newScoreBins(scores []float64, k int) (*scoreBins, []uint8) {
	n := len(scores)
	k = max(min(k, n/minPerBin), 2)
	sorted := slices.Clone(scores)
	slices.Sort(sorted)
	b := &scoreBins{}
	for j := 1; j < k; j++ {
		q := sorted[j*n/k]
		lo, _ := slices.BinarySearch(sorted, q) // the first score equal to q
		if lo == 0 {
			continue // no smaller score: q is the lowest class's
		}
		a := sorted[lo-1]
		e := a + (q-a)/2
		if !(e > a) { // a and q are neighbouring floats
			e = q
		}
		if len(b.Edges) == 0 || e > b.Edges[len(b.Edges)-1] {
			b.Edges = append(b.Edges, e)
		}
	}
	classes := make([]uint8, n)
	K := len(b.Edges) + 1
	sum, count := make([]float64, K), make([]float64, K)
	lo, hi := make([]float64, K), make([]float64, K)
	for c := range K {
		lo[c], hi[c] = math.Inf(1), math.Inf(-1)
	}
	for i, v := range scores {
		c := b.class(v)
		classes[i] = uint8(c)
		sum[c] += v
		count[c]++
		lo[c], hi[c] = min(lo[c], v), max(hi[c], v)
	}
	for c := range K {
		// Every class holds its lower quantile's scores (each edge lies above the score
		// below that quantile and at most at it), so count[c] > 0. The mean is kept
		// within the class's scores, which rounding could leave (three scores of 0.1
		// sum to 0.30000000000000004): the means then ascend strictly and lie in the
		// score range.
		b.Means = append(b.Means, min(max(sum[c]/count[c], lo[c]), hi[c]))
	}
	return b, classes
}

// class is the class of score v: the number of edges at or below it.
func (b *scoreBins) class(v float64) int {
	c, _ := slices.BinarySearch(b.Edges, v)
	if c < len(b.Edges) && b.Edges[c] == v {
		c++
	}
	return c
}

// check refuses bins a checkpoint cannot have come with: no classes or more than a forest
// takes, edges or means not finite and ascending, or a count of means other than edges
// + 1.
func (b *scoreBins) check() error {
	if len(b.Means) != len(b.Edges)+1 || len(b.Means) > forest.MaxBins {
		return fmt.Errorf("%d score classes with %d edges", len(b.Means), len(b.Edges))
	}
	for _, v := range [][]float64{b.Edges, b.Means} {
		for i, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) || (i > 0 && !(x > v[i-1])) {
				return fmt.Errorf("score classes' edges %v and means %v are not finite and ascending", b.Edges, b.Means)
			}
		}
	}
	return nil
}

// forestModel is a trained forest lane: the forest over the image features and the
// score classes it predicts.
type forestModel struct {
	forest *forest.Forest
	bins   scoreBins
}

// newForestModel is the model of a forest checkpoint whose record is rec and whose extra
// bytes are extra (the encoded forest, with its feature bins), checked to agree with each
// other and with the features this build computes.
func newForestModel(rec *saved, extra []byte) (*forestModel, error) {
	f := &forest.Forest{}
	if err := f.UnmarshalBinary(extra); err != nil {
		return nil, err
	}
	m := &forestModel{forest: f}
	if rec.Forest != nil {
		m.bins = *rec.Forest
	}
	names := featureNames()
	r := rec.Range
	switch err := m.bins.check(); {
	case err != nil:
		return nil, err
	case !(r.Max > r.Min) || math.IsInf(r.Max-r.Min, 0) || m.bins.Means[0] < r.Min || m.bins.Means[len(m.bins.Means)-1] > r.Max:
		return nil, fmt.Errorf("score classes' means %v outside the score range [%g, %g]", m.bins.Means, r.Min, r.Max)
	case f.Classes != len(m.bins.Means):
		return nil, fmt.Errorf("a forest of %d classes for %d score classes", f.Classes, len(m.bins.Means))
	case len(f.Trees) == 0:
		return nil, fmt.Errorf("a forest without trees")
	case !slices.Equal(rec.Features, names) || len(f.Binner.Edges) != len(names):
		return nil, fmt.Errorf("a forest of %d features %q; this build computes %d: %q", len(f.Binner.Edges), rec.Features, len(names), names)
	}
	for i, t := range f.Trees {
		for _, v := range t.Probs {
			if !(v >= 0 && v <= 1) {
				return nil, fmt.Errorf("tree %d has a class frequency of %v", i, v)
			}
		}
	}
	return m, nil
}

// predict is the score the features x of one image give: the mean of the score classes'
// means weighted by the forest's class probabilities.
func (m *forestModel) predict(x []float32) float64 {
	codes := make([]uint8, len(x))
	m.forest.Binner.Bin(x, codes)
	p := make([]float32, m.forest.Classes)
	m.forest.Predict(codes, p)
	return m.bins.expect(p)
}

// expect is the mean of the class means weighted by the class probabilities p (one per
// class), modified in place when they are all zero.
func (b *scoreBins) expect(p []float32) float64 {
	var w float64
	for _, v := range p {
		w += float64(v) // every leaf's frequencies sum to 1, so w ≈ 1
	}
	if !(w > 0) { // no votes, which only a forest made up with empty leaves gives
		for c := range p {
			p[c] = 1
		}
		w = float64(len(p))
	}
	// The mean as an offset from the lowest class's, weighed by shares of w (so that no
	// sum exceeds the span of the means), kept between the lowest and the highest class
	// means whatever the rounding.
	lo, hi := b.Means[0], b.Means[len(b.Means)-1]
	var off float64
	for c, v := range p {
		off += float64(v) / w * (b.Means[c] - lo)
	}
	return min(max(lo+off, lo), hi)
}

// empty is the weightless model of a forest checkpoint: its trees are the extra bytes.
type empty struct{}

func (empty) Params() []*engine.Param  { return nil }
func (empty) Buffers() []engine.Buffer { return nil }

// trainForest trains the forest lane: the features of the training images, their score
// classes, the trees grown one after another from (seed, tree), then the validation
// scores (which choose snapping when it is "auto") and the checkpoint, written once, in
// one step. It computes on the CPU, and a resumed run grows the same forest again (the
// lane's one step has nothing to resume).
func trainForest(ctx context.Context, req *protocol.TrainRequest, rec *saved, scores, vscores []float64, send func(*protocol.Progress) error) (*protocol.TrainResult, error) {
	c := rec.Config
	x, err := featuresOf(ctx, req.Train, rec.Dims)
	if err != nil {
		return nil, err
	}
	F := len(featureNames())
	bins, y := newScoreBins(scores, c.Bins)
	binner, err := forest.NewBinner(x, F)
	if err != nil {
		return nil, err
	}
	f := &forest.Forest{Classes: len(bins.Means), Binner: binner}
	codes := make([]uint8, len(x))
	binner.Bin(x, codes)
	cfg := forest.Config{MaxDepth: c.MaxDepth, MinLeaf: c.MinLeaf, Seed: uint64(c.Seed)}
	for t := range c.Trees {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := f.Grow(codes, y, cfg, t); err != nil {
			return nil, err
		}
	}
	rec.Forest, rec.Features = bins, featureNames()
	m := &forestModel{forest: f, bins: *bins}
	// The training error: the mean absolute difference of the (in-bag) predictions from
	// the training scores, in score units.
	var mae float64
	for i, v := range scores {
		mae += math.Abs(m.predict(x[i*F:(i+1)*F]) - v)
	}
	mae /= float64(len(scores))
	var val map[string]float64
	if len(vscores) > 0 {
		vx, err := featuresOf(ctx, req.Validation, rec.Dims)
		if err != nil {
			return nil, fmt.Errorf("validation: %w", err)
		}
		raw := make([]float64, len(vscores))
		for i := range raw {
			raw[i] = m.predict(vx[i*F : (i+1)*F])
		}
		val = judge(rec, raw, vscores, req.Task.Metric)
	}
	extra, err := f.MarshalBinary()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(req.WorkDir, training.Final)
	if err := ckpt.Save(path, ckpt.Checkpoint{Train: rec, Epoch: 1, Step: 1, Model: empty{}, Extra: extra}); err != nil {
		return nil, err
	}
	if err := send(&protocol.Progress{Step: 1, TotalSteps: 1, Epoch: 1, Checkpoint: path, Losses: map[string]float64{"train_mae": mae},
		Message: fmt.Sprintf("forest: %d trees on %d features of %d images, %d score classes", c.Trees, F, len(scores), len(bins.Means))}); err != nil {
		return nil, err
	}
	return device.Result(device.CPU(), path, 1, val)
}

// readForest reads a forest lane's checkpoint: its record, and the forest its extra bytes
// encode (the payload's SHA-256 checked).
func readForest(path string) (*forestModel, *saved, error) {
	man, st, err := ckpt.Read(path)
	if err != nil {
		return nil, nil, err
	}
	rec, err := parseRecord(path, man.Train)
	if err != nil {
		return nil, nil, err
	}
	m, err := newForestModel(rec, st.Extra)
	if err != nil {
		return nil, nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return m, rec, nil
}

// predictForest predicts the cases with the forest checkpoint at path: their scores,
// neither clamped nor snapped, and the checkpoint's record.
func predictForest(ctx context.Context, path string, cases []protocol.Case) ([]float64, *saved, error) {
	m, rec, err := readForest(path)
	if err != nil {
		return nil, nil, err
	}
	x, err := featuresOf(ctx, cases, rec.Dims)
	if err != nil {
		return nil, nil, err
	}
	F := len(rec.Features)
	out := make([]float64, len(cases))
	for i := range out {
		out[i] = m.predict(x[i*F : (i+1)*F])
	}
	return out, rec, nil
}

// featureNames are the names of the image features the forest lane computes
// (imagefeat.Names).
func featureNames() []string { return imagefeat.Names() }

// featuresOf computes the image features of every case (rows of imagefeat.Count, in the
// cases' order) from its image at its own resolution and in its own units, several cases
// at a time; an image that is not a 2D slice in a 2D task, or a volume in a 3D one, is an
// error naming its case.
func featuresOf(ctx context.Context, cases []protocol.Case, dims int) ([]float32, error) {
	F := imagefeat.Count
	out := make([]float32, len(cases)*F)
	errs, err := sdk.EachCase(ctx, len(cases), func(i int) error {
		v, err := readImage(cases[i], dims)
		if err != nil {
			return err
		}
		copy(out[i*F:(i+1)*F], imagefeat.Of(v))
		return nil
	})
	if err == nil {
		err = sdk.FirstError(errs)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// readImage reads case k's image (one file, or one file per channel), checked to be a 2D
// slice in a 2D task (dims 2) or a volume in a 3D one, as cnn.Load checks it.
func readImage(k protocol.Case, dims int) (*volume.Volume, error) {
	if len(k.Images) == 0 {
		return nil, fmt.Errorf("case %s: %w: no image file", k.ID, cnn.ErrImage)
	}
	v, err := data.ReadChannels(k.Images)
	if err != nil {
		return nil, fmt.Errorf("case %s: %w", k.ID, err)
	}
	switch {
	case dims == 3 && v.Dims[2] < 2:
		return nil, fmt.Errorf("case %s: %w: %s has %d slice, a 3D task needs a volume", k.ID, cnn.ErrImage, k.Images[0], v.Dims[2])
	case dims == 2 && v.Dims[2] != 1:
		return nil, fmt.Errorf("case %s: %w: %s has %d slices, a 2D task takes single-slice images", k.ID, cnn.ErrImage, k.Images[0], v.Dims[2])
	}
	return v, nil
}
