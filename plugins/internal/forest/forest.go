// Package forest is a random forest classifier on binned features (Breiman's random
// forests with the histogram splits of LightGBM and scikit-learn's
// HistGradientBoosting): the fast learner of the segmentation plugin's voxel lanes, which
// classify each voxel from its intensity, filter responses and position. A U-Net from
// scratch needs thousands of steps; a forest of a few dozen trees on a hundred thousand
// voxels grows in seconds on a CPU, so a user with minutes still gets a model that uses
// where a voxel lies.
//
// It is written here rather than taken from a library: the Go forests (golearn's, for one)
// split on sorted raw values and allocate per node, and none grows a tree
// deterministically from (seed, tree index), which the plugins' rounds and resumes need
// (tree k of a run stopped after k trees and continued is the tree k of an uninterrupted
// one, bit for bit).
//
// Features are binned once ([Binner]: at most 255 edges per feature, each halfway between
// a quantile of the training samples and the next larger value); a split sends a sample
// left when its bin is at most the split's.
// Each tree grows on a bootstrap sample, choosing at each node the best Gini split among
// a random √F of the features, down to MaxDepth or MinLeaf samples; a leaf holds its
// samples' class frequencies, and the forest predicts their mean.
package forest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// MaxBins is the most bins a feature takes (its codes fit a byte).
const MaxBins = 256

// Binner maps each feature's values to bins: Edges[f] are feature f's ascending bin
// edges; a value's bin is the number of edges below or at it.
type Binner struct {
	Edges [][]float32
}

// NewBinner takes the edges of each of features features from the rows of x (n × features,
// row-major): up to MaxBins−1 quantiles of the distinct values.
func NewBinner(x []float32, features int) (*Binner, error) {
	if features <= 0 || len(x)%features != 0 || len(x) == 0 {
		return nil, fmt.Errorf("forest: %d values are not rows of %d features", len(x), features)
	}
	n := len(x) / features
	b := &Binner{Edges: make([][]float32, features)}
	col := make([]float32, n)
	for f := range features {
		for i := range n {
			col[i] = x[i*features+f]
		}
		slices.Sort(col)
		var edges []float32
		for k := 1; k < MaxBins; k++ {
			q := col[min(k*n/MaxBins, n-1)]
			// The edge lies halfway between the quantile and the next larger value, as a
			// split on sorted values would put its threshold: a value in the gap
			// between two training values (a slab between the training slabs, along
			// a position feature) goes to the side it is nearer.
			j, _ := slices.BinarySearchFunc(col, q, func(a, b float32) int {
				if a <= b {
					return -1
				}
				return 1
			})
			if j >= n {
				continue
			}
			e := q + (col[j]-q)/2
			if len(edges) == 0 || e > edges[len(edges)-1] {
				edges = append(edges, e)
			}
		}
		b.Edges[f] = edges
	}
	return b, nil
}

// Bin writes the bins of the rows of x into codes (same length).
func (b *Binner) Bin(x []float32, codes []uint8) {
	F := len(b.Edges)
	for i, v := range x {
		e := b.Edges[i%F]
		lo, hi := 0, len(e)
		for lo < hi { // the number of edges ≤ v
			m := (lo + hi) / 2
			if e[m] <= v {
				lo = m + 1
			} else {
				hi = m
			}
		}
		codes[i] = uint8(lo)
	}
}

// Config is how trees grow.
type Config struct {
	// MaxDepth is the deepest a leaf lies (the root at 0); MinLeaf the fewest samples a
	// split leaves on either side.
	MaxDepth, MinLeaf int
	// Seed and the tree's index seed each tree's bootstrap and feature draws.
	Seed uint64
}

// node is a split (Leaf < 0) or a leaf: Leaf is the offset of its class frequencies in
// Tree.Probs.
type node struct {
	Feature     int32
	Bin         uint8
	Left, Right int32
	Leaf        int32
}

// Tree is one grown tree.
type Tree struct {
	nodes []node
	Probs []float32
}

// Forest is a classifier of Classes classes on features binned by Binner.
type Forest struct {
	Classes int
	Binner  *Binner
	Trees   []Tree
}

// ErrData reports samples a forest cannot grow on.
var ErrData = errors.New("forest: cannot grow on these samples")

// Grow grows tree index of f (appended; index must be len(f.Trees)) on the n samples whose
// binned features are codes (n × features) and classes y.
func (f *Forest) Grow(codes []uint8, y []uint8, cfg Config, index int) error {
	F := len(f.Binner.Edges)
	n := len(y)
	switch {
	case n == 0 || len(codes) != n*F:
		return fmt.Errorf("%w: %d codes for %d samples of %d features", ErrData, len(codes), n, F)
	case index != len(f.Trees):
		return fmt.Errorf("%w: tree %d grown after %d trees", ErrData, index, len(f.Trees))
	}
	for _, c := range y {
		if int(c) >= f.Classes {
			return fmt.Errorf("%w: class %d of %d", ErrData, c, f.Classes)
		}
	}
	f.Trees = append(f.Trees, grow(codes, y, F, f.Classes, cfg, index))
	return nil
}

// grow grows one tree on a bootstrap sample drawn with (cfg.Seed, index).
func grow(codes, y []uint8, F, K int, cfg Config, index int) Tree {
	r := rand.New(rand.NewPCG(cfg.Seed, uint64(index)))
	n := len(y)
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = int32(r.IntN(n))
	}
	g := grower{codes: codes, y: y, F: F, K: K, cfg: cfg, r: r, mtry: max(int(math.Sqrt(float64(F))), 1),
		hist: make([]float64, MaxBins*K), feats: make([]int, F)}
	for i := range g.feats {
		g.feats[i] = i
	}
	g.node(idx, 0)
	return g.t
}

type grower struct {
	codes, y []uint8
	F, K     int
	cfg      Config
	r        *rand.Rand
	mtry     int
	hist     []float64
	feats    []int
	t        Tree
}

// node grows the subtree of the samples idx at depth and returns its node's index.
func (g *grower) node(idx []int32, depth int) int32 {
	at := int32(len(g.t.nodes))
	g.t.nodes = append(g.t.nodes, node{})
	counts := make([]float64, g.K)
	for _, i := range idx {
		counts[g.y[i]]++
	}
	feature, bin, ok := -1, 0, false
	if depth < g.cfg.MaxDepth && len(idx) >= 2*max(g.cfg.MinLeaf, 1) && !pure(counts) {
		feature, bin, ok = g.split(idx, counts)
	}
	if !ok {
		g.t.nodes[at] = node{Leaf: int32(len(g.t.Probs)), Feature: -1}
		for _, c := range counts {
			g.t.Probs = append(g.t.Probs, float32(c/float64(len(idx))))
		}
		return at
	}
	// Partition idx in place: bins ≤ bin first.
	l := 0
	for j, i := range idx {
		if g.codes[int(i)*g.F+feature] <= uint8(bin) {
			idx[l], idx[j] = idx[j], idx[l]
			l++
		}
	}
	left := g.node(idx[:l], depth+1)
	right := g.node(idx[l:], depth+1)
	g.t.nodes[at] = node{Feature: int32(feature), Bin: uint8(bin), Left: left, Right: right, Leaf: -1}
	return at
}

func pure(counts []float64) bool {
	nz := 0
	for _, c := range counts {
		if c > 0 {
			nz++
		}
	}
	return nz <= 1
}

// split finds the best Gini split of idx among mtry features drawn at random.
func (g *grower) split(idx []int32, counts []float64) (feature, bin int, ok bool) {
	n := float64(len(idx))
	parent := gini(counts, n)
	best := 0.0
	minLeaf := float64(max(g.cfg.MinLeaf, 1))
	// A partial Fisher–Yates shuffle draws the features.
	for k := range g.mtry {
		j := k + g.r.IntN(g.F-k)
		g.feats[k], g.feats[j] = g.feats[j], g.feats[k]
	}
	left := make([]float64, g.K)
	for _, f := range g.feats[:g.mtry] {
		clear(g.hist)
		top := 0
		for _, i := range idx {
			c := int(g.codes[int(i)*g.F+f])
			g.hist[c*g.K+int(g.y[i])]++
			top = max(top, c)
		}
		clear(left)
		nl := 0.0
		for b := range top {
			for c := range g.K {
				left[c] += g.hist[b*g.K+c]
				nl += g.hist[b*g.K+c]
			}
			nr := n - nl
			if nl < minLeaf || nr < minLeaf {
				continue
			}
			gl := gini(left, nl)
			gr := 0.0
			for c := range g.K {
				r := counts[c] - left[c]
				gr += r * r
			}
			gr = 1 - gr/(nr*nr)
			if gain := parent - (nl*gl+nr*gr)/n; gain > best+1e-12 {
				best, feature, bin, ok = gain, f, b, true
			}
		}
	}
	return feature, bin, ok
}

// gini is the Gini impurity of counts summing to n.
func gini(counts []float64, n float64) float64 {
	s := 0.0
	for _, c := range counts {
		s += c * c
	}
	return 1 - s/(n*n)
}

// Predict adds to probs (Classes values) the mean over the trees of the class frequencies
// of the leaf the binned sample codes (one value per feature) reaches.
func (f *Forest) Predict(codes []uint8, probs []float32) {
	w := 1 / float32(len(f.Trees))
	for t := range f.Trees {
		tr := &f.Trees[t]
		i := int32(0)
		for tr.nodes[i].Leaf < 0 {
			nd := &tr.nodes[i]
			if codes[nd.Feature] <= nd.Bin {
				i = nd.Left
			} else {
				i = nd.Right
			}
		}
		p := tr.Probs[tr.nodes[i].Leaf:][:f.Classes]
		for c, v := range p {
			probs[c] += w * v
		}
	}
}
