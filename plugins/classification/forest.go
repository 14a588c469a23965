package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"amid/plugins/engine/ckpt"
	"amid/plugins/internal/cnn"
	"amid/plugins/internal/forest"
	"amid/plugins/internal/imagefeat"
	"amid/plugins/internal/training"
	"amid/plugins/protocol"
	"amid/plugins/sdk"
	"amid/plugins/taskspec"
	"amid/viewer/imageio"
)

// The forest lane classifies an image from its global features (package imagefeat, one
// vector per image file of a case, concatenated) with one random forest per attribute
// (package forest). A network from scratch needs thousands of steps to learn what a
// modality or a protocol looks like; a forest on a hundred images' features grows in well
// under a second, so a user with minutes still gets a model, and the host keeps whichever
// lane validates better.

// defaultTrees is the forest lane's trees per attribute: Probst and Boulesteix ("To tune
// or not to tune the number of trees in random forest", JMLR 18, 2018) find the error
// curves flat after a few hundred trees and more trees never worse in expectation;
// 256 trees on a hundred images grow in a fraction of a second.
const defaultTrees = 256

// maxForestTrees is the most trees a configuration asks for, the most a decoded forest
// may hold (amid/plugins/internal/forest's limit).
const maxForestTrees = 4096

// forestDepth and forestMinLeaf grow the trees out, as Breiman's forests (and
// scikit-learn's RandomForestClassifier by default) do: a leaf may hold one sample, and
// the depth limit only bounds the recursion (a tree of 2³⁰ leaves needs more images than
// a task has).
const (
	forestDepth   = 30
	forestMinLeaf = 1
)

// forestSeedStep separates the seeds of the attributes' forests: attribute i's trees draw
// from seed + i·forestSeedStep (the golden-ratio increment of SplitMix64), so that two
// attributes do not grow on the same bootstrap samples.
const forestSeedStep = 0x9E3779B97F4A7C15

// forestRef names the forest of one attribute in the checkpoint's extra bytes: the
// forests' encodings (forest.MarshalBinary, each with its bins) follow each other in the
// order of the record's list, each Bytes long.
type forestRef struct {
	Attr  string `json:"attr"`
	Bytes int    `json:"bytes"`
}

// caseFeatures are the features of a case of a dims-dimensional task: imagefeat's of each
// of its image files, in order.
func caseFeatures(k protocol.Case, dims int) ([]float32, error) {
	if len(k.Images) == 0 {
		return nil, fmt.Errorf("%w: no image file", cnn.ErrImage)
	}
	out := make([]float32, 0, len(k.Images)*imagefeat.Count)
	for _, p := range k.Images {
		v, err := imageio.Read(p)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", p, err)
		}
		switch {
		case dims == 3 && v.Dims[2] < 2:
			return nil, fmt.Errorf("%w: %s has %d slice, a 3D task needs a volume", cnn.ErrImage, p, v.Dims[2])
		case dims == 2 && v.Dims[2] != 1:
			return nil, fmt.Errorf("%w: %s has %d slices, a 2D task takes single-slice images", cnn.ErrImage, p, v.Dims[2])
		}
		out = append(out, imagefeat.Of(v)...)
	}
	return out, nil
}

// allFeatures are the features of every case (rows of files·imagefeat.Count values),
// computed by as many workers as there are CPUs, and the image files a case has (every
// case must have as many).
func allFeatures(ctx context.Context, cases []protocol.Case, dims int) ([]float32, int, error) {
	files := len(cases[0].Images)
	F := files * imagefeat.Count
	x := make([]float32, len(cases)*F)
	errs, err := sdk.EachCase(ctx, len(cases), func(i int) error {
		k := cases[i]
		if len(k.Images) != files {
			return fmt.Errorf("case %s: %w: %d image files, other cases have %d", k.ID, cnn.ErrImage, len(k.Images), files)
		}
		f, err := caseFeatures(k, dims)
		if err != nil {
			return fmt.Errorf("case %s: %w", k.ID, err)
		}
		copy(x[i*F:], f)
		return nil
	})
	if err == nil {
		err = sdk.FirstError(errs)
	}
	if err != nil {
		return nil, 0, err
	}
	return x, files, nil
}

// balancedRows are the training rows a forest grows on for the classes y of K: every class
// present repeated, in order and cyclically, to as many rows as the most frequent class
// has, so that each tree's uniform bootstrap draws every class equally often in expectation
// (the balanced random forest of Chen, Liaw and Breiman, 2004, by replication), and the
// leaves' class frequencies weigh classes as scikit-learn's "balanced" class weights do.
func balancedRows(y []uint8, K int) []int {
	byClass := make([][]int, K)
	for i, c := range y {
		byClass[c] = append(byClass[c], i)
	}
	most := 0
	for _, r := range byClass {
		most = max(most, len(r))
	}
	var out []int
	for _, r := range byClass {
		if len(r) == 0 {
			continue
		}
		for j := range most {
			out = append(out, r[j%len(r)])
		}
	}
	return out
}

// trainForest grows the forest lane's forests, one per attribute on every training case,
// and writes its checkpoint: no weights, the forests in the extra bytes, listed by the
// record.
func trainForest(ctx context.Context, req *protocol.TrainRequest, s *taskspec.Spec, rec saved, labels []map[string]int, send func(*protocol.Progress) error) (string, error) {
	if rec.Multi != "" {
		return "", fmt.Errorf("the forest lane does not learn the multi-label attribute %q", rec.Multi)
	}
	start := time.Now()
	x, files, err := allFeatures(ctx, req.Train, s.Dims)
	if err != nil {
		return "", err
	}
	rec.Files = files
	F := files * imagefeat.Count
	bins, err := forest.NewBinner(x, F)
	if err != nil {
		return "", err
	}
	codes := make([]uint8, len(x))
	bins.Bin(x, codes)
	var extra []byte
	c := rec.Config
	for ai, a := range s.Attributes {
		K := len(a.Classes)
		if K > forest.MaxBins {
			return "", fmt.Errorf("attribute %s has %d classes; the forest takes at most %d", a.Name, K, forest.MaxBins)
		}
		y := make([]uint8, len(labels))
		for i, l := range labels {
			y[i] = uint8(l[a.Name])
		}
		rows := balancedRows(y, K)
		rc, ry := make([]uint8, 0, len(rows)*F), make([]uint8, len(rows))
		for j, i := range rows {
			rc = append(rc, codes[i*F:(i+1)*F]...)
			ry[j] = y[i]
		}
		f := &forest.Forest{Classes: K, Binner: bins}
		cfg := forest.Config{MaxDepth: forestDepth, MinLeaf: forestMinLeaf, Seed: uint64(c.Seed) + uint64(ai)*forestSeedStep}
		for t := range c.Trees {
			if err := ctx.Err(); err != nil {
				return "", err
			}
			if err := f.Grow(rc, ry, cfg, t); err != nil {
				return "", fmt.Errorf("attribute %s: %w", a.Name, err)
			}
		}
		b, err := f.MarshalBinary()
		if err != nil {
			return "", err
		}
		rec.Forests = append(rec.Forests, forestRef{Attr: a.Name, Bytes: len(b)})
		extra = append(extra, b...)
	}
	p := filepath.Join(req.WorkDir, training.Final)
	if err := ckpt.Save(p, ckpt.Checkpoint{Train: rec, Epoch: 1, Step: 1, Model: empty{}, Extra: extra}); err != nil {
		return "", err
	}
	return p, send(&protocol.Progress{Step: 1, TotalSteps: 1, Epoch: 1, Checkpoint: p,
		Message: fmt.Sprintf("forest: %d trees for each of %d attributes on %d images × %d features in %v",
			c.Trees, len(rec.Forests), len(req.Train), F, time.Since(start).Round(time.Millisecond))})
}

// readForests reads the forests of the forest lane's checkpoint at path, whose record is
// rec, one per attribute in the order of rec.Forests, each checked against the record.
func readForests(path string, rec saved) ([]*forest.Forest, error) {
	_, st, err := ckpt.Read(path)
	if err != nil {
		return nil, err
	}
	f, err := decodeForests(st.Extra, rec)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return f, nil
}

// decodeForests decodes the forests that the extra bytes b of a checkpoint whose record is
// rec hold; anything else is an error wrapping forest.ErrFormat.
func decodeForests(b []byte, rec saved) ([]*forest.Forest, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", forest.ErrFormat, fmt.Sprintf(format, a...))
	}
	if rec.Files < 1 || rec.Files > maxFiles {
		return nil, bad("%d image files a case", rec.Files)
	}
	if len(rec.Forests) == 0 {
		return nil, bad("no forests")
	}
	var out []*forest.Forest
	seen := map[string]bool{}
	for _, r := range rec.Forests {
		K, ok := rec.attribute(r.Attr)
		switch {
		case !ok:
			return nil, bad("a forest of attribute %q, which the record does not list", r.Attr)
		case seen[r.Attr]:
			return nil, bad("two forests of attribute %q", r.Attr)
		case r.Bytes < 0 || r.Bytes > len(b):
			return nil, bad("attribute %s's forest of %d bytes in the %d left", r.Attr, r.Bytes, len(b))
		}
		seen[r.Attr] = true
		f := &forest.Forest{}
		if err := f.UnmarshalBinary(b[:r.Bytes]); err != nil {
			return nil, fmt.Errorf("attribute %s: %w", r.Attr, err)
		}
		b = b[r.Bytes:]
		switch {
		case f.Classes != K:
			return nil, bad("attribute %s's forest has %d classes, the attribute %d", r.Attr, f.Classes, K)
		case len(f.Trees) == 0:
			return nil, bad("attribute %s's forest has no trees", r.Attr)
		case len(f.Binner.Edges) != rec.Files*imagefeat.Count:
			return nil, bad("attribute %s's forest takes %d features, %d image files give %d", r.Attr, len(f.Binner.Edges), rec.Files, rec.Files*imagefeat.Count)
		}
		out = append(out, f)
	}
	if len(b) != 0 {
		return nil, bad("%d bytes after the last forest", len(b))
	}
	for _, u := range rec.Units {
		for _, a := range u.Attrs {
			if !seen[a] {
				return nil, bad("no forest of attribute %q", a)
			}
		}
	}
	return out, nil
}

// maxFiles bounds the image files a case of a decoded record may have: far above any
// task's channels, so that a corrupt record cannot claim features without bound.
const maxFiles = 1024

// forestClasses predicts a case's class of every attribute with the forests: the class of
// the highest mean vote (the first of equal ones), the votes as probabilities, and how sure
// the forests are (the least, over the attributes, of the chosen class's probability).
func (p *predictor) forestClasses(k protocol.Case) (map[string]int, map[string][]float64, *float64, error) {
	if len(k.Images) != p.rec.Files {
		return nil, nil, nil, fmt.Errorf("%w: %d image files, the model was trained on %d", cnn.ErrImage, len(k.Images), p.rec.Files)
	}
	x, err := caseFeatures(k, p.rec.Dims)
	if err != nil {
		return nil, nil, nil, err
	}
	codes := make([]uint8, len(x))
	out, probs := map[string]int{}, map[string][]float64{}
	conf := 1.0
	for i, f := range p.forests {
		f.Binner.Bin(x, codes)
		v := make([]float32, f.Classes)
		f.Predict(codes, v)
		var sum float64
		for _, x := range v {
			sum += float64(x)
		}
		pa := make([]float64, len(v))
		best := 0
		for c, x := range v {
			if sum > 0 {
				pa[c] = float64(x) / sum
			}
			if x > v[best] {
				best = c
			}
		}
		a := p.rec.Forests[i].Attr
		out[a], probs[a] = best, pa
		conf = min(conf, pa[best])
	}
	return out, probs, &conf, nil
}
