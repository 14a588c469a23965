package forest

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// samples are n points of a task that only position decides: three coordinates uniform
// in [0, 1), an intensity that is the same noise for every class, and the class of the
// octant-like cell (x < 0.5, y < 0.3 + 0.4·z) the point lies in: 4 classes, none of which
// one feature alone or the intensity tells apart.
func samples(n int, seed uint64) (x []float32, y []uint8) {
	r := rand.New(rand.NewPCG(seed, 7))
	for range n {
		px, py, pz := r.Float32(), r.Float32(), r.Float32()
		x = append(x, px, py, pz, float32(r.NormFloat64()))
		c := uint8(0)
		if px >= 0.5 {
			c++
		}
		if py >= 0.3+0.4*pz {
			c += 2
		}
		y = append(y, c)
	}
	return x, y
}

func accuracy(f *Forest, x []float32, y []uint8) float64 {
	codes := make([]uint8, len(x))
	f.Binner.Bin(x, codes)
	F := len(f.Binner.Edges)
	right := 0
	for i := range y {
		p := make([]float32, f.Classes)
		f.Predict(codes[i*F:(i+1)*F], p)
		if uint8(slices.Index(p, slices.Max(p))) == y[i] {
			right++
		}
	}
	return float64(right) / float64(len(y))
}

func grown(t *testing.T, x []float32, y []uint8, trees int, cfg Config) *Forest {
	t.Helper()
	b, err := NewBinner(x, 4)
	if err != nil {
		t.Fatal(err)
	}
	codes := make([]uint8, len(x))
	b.Bin(x, codes)
	f := &Forest{Classes: 4, Binner: b}
	for k := range trees {
		if err := f.Grow(codes, y, cfg, k); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// A forest learns the position-only task: on new points it is right far more often than
// the best single-feature rule can be (a split on x alone is right on half the points at
// most, since y's boundary cuts both halves), and the intensity, pure noise, adds nothing.
func TestLearnsPosition(t *testing.T) {
	x, y := samples(20000, 1)
	f := grown(t, x, y, 20, Config{MaxDepth: 12, MinLeaf: 5, Seed: 3})
	tx, ty := samples(5000, 2)
	// The boundary's cells are 1/MaxBins wide; the forest is right away from them. 0.97
	// leaves room for the bins (256 per feature) and the bootstrap's noise.
	if a := accuracy(f, tx, ty); a < 0.97 {
		t.Errorf("accuracy %.4f on new points, want ≥ 0.97", a)
	}
	stump := grown(t, x, y, 1, Config{MaxDepth: 1, MinLeaf: 5, Seed: 3})
	if a := accuracy(stump, tx, ty); a > 0.55 {
		t.Errorf("one split is right on %.4f of the points: the task is easier than it should be", a)
	}
}

// Trees grown in two runs, the second continuing the first after it was encoded and
// decoded (a round stopped at tree 5 and resumed), predict bit for bit what the trees of
// one uninterrupted run predict.
func TestRoundsAreBitIdentical(t *testing.T) {
	x, y := samples(3000, 4)
	cfg := Config{MaxDepth: 8, MinLeaf: 3, Seed: 9}
	whole := grown(t, x, y, 10, cfg)
	first := grown(t, x, y, 5, cfg)
	b, err := first.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var resumed Forest
	if err := resumed.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	codes := make([]uint8, len(x))
	resumed.Binner.Bin(x, codes)
	for k := 5; k < 10; k++ {
		if err := resumed.Grow(codes, y, cfg, k); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 200 {
		p, q := make([]float32, 4), make([]float32, 4)
		whole.Predict(codes[i*4:(i+1)*4], p)
		resumed.Predict(codes[i*4:(i+1)*4], q)
		if !slices.Equal(p, q) {
			t.Fatalf("sample %d: %v uninterrupted, %v resumed", i, p, q)
		}
	}
	if err := resumed.Grow(codes, y, cfg, 3); !errors.Is(err, ErrData) {
		t.Errorf("tree 3 grown after 10: %v, want ErrData", err)
	}
}

func TestBadSamples(t *testing.T) {
	if _, err := NewBinner([]float32{1, 2, 3}, 2); err == nil {
		t.Error("3 values as rows of 2 features: no error")
	}
	b, _ := NewBinner([]float32{1, 2, 3, 4}, 2)
	f := &Forest{Classes: 2, Binner: b}
	if err := f.Grow([]uint8{0, 0, 1, 1}, []uint8{0, 2}, Config{MaxDepth: 2}, 0); !errors.Is(err, ErrData) {
		t.Errorf("class 2 of 2: %v, want ErrData", err)
	}
}

// FuzzDecode feeds arbitrary bytes to the decoder: it fails with ErrFormat or decodes a
// forest whose every walk ends at a leaf.
func FuzzDecode(f *testing.F) {
	x, y := samples(300, 5)
	b, _ := NewBinner(x, 4)
	codes := make([]uint8, len(x))
	b.Bin(x, codes)
	fo := &Forest{Classes: 4, Binner: b}
	for k := range 2 {
		_ = fo.Grow(codes, y, Config{MaxDepth: 4, MinLeaf: 2, Seed: 1}, k)
	}
	enc, _ := fo.MarshalBinary()
	f.Add(enc)
	f.Add(enc[:len(enc)/2])
	f.Add([]byte(magic))
	f.Fuzz(func(t *testing.T, data []byte) {
		var d Forest
		err := d.UnmarshalBinary(data)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error of no known kind: %v", err)
			}
			return
		}
		if len(d.Trees) == 0 {
			return
		}
		p := make([]float32, d.Classes)
		d.Predict(make([]uint8, len(d.Binner.Edges)), p)
	})
}
