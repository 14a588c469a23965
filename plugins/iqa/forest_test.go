package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"amid/plugins/engine/ckpt"
	"amid/plugins/plugintest"
	"amid/plugins/protocol"
	"amid/plugins/taskspec"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// forestCfg is the forest lane's planned configuration.
var forestCfg = []byte(`{"lane":"forest"}`)

// kernelCase writes a side×side float32 TIFF of a CT-like slice as ctSlice draws it,
// with Gaussian noise of 10 to 90 HU and then a Gaussian blur of 0.3 to 1.5 pixels (a
// reconstruction kernel: a smooth one hides the noise and blurs the edges), each drawn
// uniformly on its own, and its label: 4 × (1 − (u + w) / 2) for the two draws' fractions
// u of the noise and w of the blur, so that the score falls with both. It returns the
// case and the two fractions.
func kernelCase(t testing.TB, dir, id string, r *rand.Rand) (protocol.Case, float64, float64) {
	t.Helper()
	v, err := volume.New(volume.Float32, [4]int{side, side, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	u, w := r.Float64(), r.Float64()
	sd, blur := 10+80*u, 0.3+1.2*w
	img := blur2D(ctSlice(r, sd), side, blur)
	px := v.Data.([]float32)
	for i, x := range img {
		px[i] = float32(x)
	}
	score := 4 * (1 - (u+w)/2)
	c := protocol.Case{ID: id, Images: []string{filepath.Join(dir, id+".tif")}, Label: filepath.Join(dir, id+".json")}
	if err := imageio.Write(c.Images[0], v); err != nil {
		t.Fatal(err)
	}
	writeLabel(t, c.Label, &taskspec.Annotation{Score: &score})
	return c, u, w
}

// blur2D is the n×n image p blurred by a Gaussian of sigma pixels, separably, the edges
// clamped.
func blur2D(p []float64, n int, sigma float64) []float64 {
	r := int(math.Ceil(3 * sigma))
	k := make([]float64, 2*r+1)
	var sum float64
	for i := -r; i <= r; i++ {
		k[i+r] = math.Exp(-float64(i*i) / (2 * sigma * sigma))
		sum += k[i+r]
	}
	for i := range k {
		k[i] /= sum
	}
	cur := slices.Clone(p)
	for _, stride := range [2][2]int{{1, n}, {n, 1}} { // along x, then along y
		out := make([]float64, len(p))
		for a := range n {
			for b := range n {
				var acc float64
				for j := -r; j <= r; j++ {
					bb := min(max(b+j, 0), n-1)
					acc += k[j+r] * cur[a*stride[1]+bb*stride[0]]
				}
				out[a*stride[1]+b*stride[0]] = acc
			}
		}
		cur = out
	}
	return cur
}

// kernelCases writes n kernelCase cases drawn from seed, with their noise and blur
// fractions.
func kernelCases(t testing.TB, n int, seed uint64) ([]protocol.Case, []float64, []float64) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(seed, 17))
	var (
		cs   []protocol.Case
		u, w []float64
	)
	for i := range n {
		c, a, b := kernelCase(t, dir, fmt.Sprintf("kernel%03d", i), r)
		cs, u, w = append(cs, c), append(u, a), append(w, b)
	}
	return cs, u, w
}

// TestForestLearns trains the forest lane on 200 generated slices whose score falls with
// their noise and their blur together, and scores 100 held-out ones with |PLCC| + |SROCC|
// + |KROCC| (at most 3). Knowing either factor exactly scores about 1.9 (the score is the
// sum of two independent uniform terms: a Pearson correlation of 1/√2 with either, a
// Spearman about as high, a Kendall about 1/2), which the test computes on the same cases;
// and the blur lowers the noise a fine Laplacian sees, so no one feature ranks the
// images. The forest must read both factors off the image (the noise from the Laplacians'
// σ, the blur from how that σ falls from fine to coarse spacings) and score above 2.5:
// it scored 2.78 to 2.85 on six seeds of the cases (with min_leaf 1, 2 or 5, and 8, 16 or
// 32 classes), and 2.5 is still 0.6 above either factor alone.
func TestForestLearns(t *testing.T) {
	cases, u, w := kernelCases(t, 300, 1)
	res, err := iqa{}.Train(context.Background(), &protocol.TrainRequest{
		LaneID: "forest", Task: task(t), Config: forestCfg, Train: cases[:200], Validation: cases[200:], WorkDir: t.TempDir(), Seed: 3,
	}, func(*protocol.Progress) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	v := res.Validation
	truth := make([]float64, 100)
	for i := range truth {
		truth[i] = 4 * (1 - (u[200+i]+w[200+i])/2)
	}
	one, _, _, _ := score(u[200:], truth) // the correlations' magnitudes: the sign does not count
	other, _, _, _ := score(w[200:], truth)
	t.Logf("forest: score %.3f (PLCC %.3f, SROCC %.3f, KROCC %.3f); raw %.3f, snapped %.3f; the noise alone %.3f, the blur alone %.3f",
		v["score"], v["plcc"], v["srocc"], v["krocc"], v["score_raw"], v["score_snapped"], one, other)
	if best := max(one, other); !(v["score"] > 2.5) || !(v["score"] > best+0.5) {
		t.Errorf("forest scores %.3f, want above 2.5 and 0.5 above the better factor alone (%.3f)", v["score"], best)
	}
	if res.Steps != 1 {
		t.Errorf("the forest trained %d steps, want 1", res.Steps)
	}
}

// readScore reads the score of a prediction file.
func readScore(t *testing.T, path string) float64 {
	t.Helper()
	s, _ := spec(task(t))
	a, err := taskspec.ReadAnnotation(path, s)
	if err != nil {
		t.Fatal(err)
	}
	return *a.Score
}

// TestForestReproduces: two runs with one seed write byte-identical checkpoints; the
// scores predicted from the checkpoint are bit for bit those validation computed (the
// validation figures recomputed from the predictions match exactly), inside the range,
// and a different seed grows a different forest.
func TestForestReproduces(t *testing.T) {
	cases, _, _ := kernelCases(t, 60, 2)
	train := func(seed int64) (*protocol.TrainResult, []byte) {
		res, err := iqa{}.Train(context.Background(), &protocol.TrainRequest{Task: task(t), Config: []byte(`{"lane":"forest","trees":32,"snap":"off"}`),
			Train: cases[:40], Validation: cases[40:], WorkDir: t.TempDir(), Seed: seed}, func(*protocol.Progress) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(res.Checkpoint)
		if err != nil {
			t.Fatal(err)
		}
		return res, b
	}
	res, a := train(7)
	if _, b := train(7); !bytes.Equal(a, b) {
		t.Error("two runs with seed 7 wrote different checkpoints")
	}
	if _, b := train(8); bytes.Equal(a, b) {
		t.Error("seeds 7 and 8 wrote the same checkpoint")
	}
	out := t.TempDir()
	pr, err := iqa{}.Predict(context.Background(), &protocol.PredictRequest{Checkpoint: res.Checkpoint, Cases: cases[40:], OutputDir: out})
	if err != nil {
		t.Fatal(err)
	}
	var pred, truth []float64
	for i, p := range pr.Predictions {
		v := readScore(t, p.Files[0])
		if v < 0 || v > 4 {
			t.Errorf("case %s: score %v outside 0–4", p.CaseID, v)
		}
		pred, truth = append(pred, v), append(truth, readScore(t, cases[40+i].Label))
	}
	got, plcc, srocc, krocc := score(pred, truth)
	v := res.Validation
	if got != v["score"] || plcc != v["plcc"] || srocc != v["srocc"] || krocc != v["krocc"] {
		t.Errorf("the predictions score %v (%v, %v, %v), validation said %v (%v, %v, %v)", got, plcc, srocc, krocc, v["score"], v["plcc"], v["srocc"], v["krocc"])
	}
	// Predicting again gives the same bits.
	out2 := t.TempDir()
	if _, err := (iqa{}).Predict(context.Background(), &protocol.PredictRequest{Checkpoint: res.Checkpoint, Cases: cases[40:], OutputDir: out2}); err != nil {
		t.Fatal(err)
	}
	for _, p := range pr.Predictions {
		a, _ := os.ReadFile(p.Files[0])
		b, _ := os.ReadFile(filepath.Join(out2, filepath.Base(p.Files[0])))
		if !bytes.Equal(a, b) {
			t.Errorf("case %s: %s, then %s", p.CaseID, a, b)
		}
	}
}

// TestScoreBins: equal scores share a class, a higher score is in no lower class, there
// are no more classes than distinct scores or than a class's minPerBin allows, and the
// class means ascend within the scores' range.
func TestScoreBins(t *testing.T) {
	for _, tc := range []struct {
		name   string
		scores []float64
		k      int
		want   int // classes
	}{
		{"continuous", seq(160, func(i int) float64 { return math.Sqrt(float64(i)) }), 16, 16},
		{"grid of 5", seq(100, func(i int) float64 { return float64(i % 5) }), 16, 5},
		{"two values", seq(40, func(i int) float64 { return float64(i % 2) }), 16, 2},
		{"few cases", seq(12, func(i int) float64 { return float64(i) }), 16, 3},
		{"skewed", seq(100, func(i int) float64 { return float64(min(i, 80)) }), 16, 14},
		{"one value", seq(30, func(int) float64 { return 2 }), 16, 1},
		{"neighbouring floats", seq(40, func(i int) float64 { return math.Nextafter(1, float64(i%2)*2) }), 16, 2},
		{"repeated tenths", seq(48, func(i int) float64 { return float64(i/3) / 10 }), 16, 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, y := newScoreBins(tc.scores, tc.k)
			if err := b.check(); err != nil {
				t.Fatal(err)
			}
			if lo, hi := slices.Min(tc.scores), slices.Max(tc.scores); b.Means[0] < lo || b.Means[len(b.Means)-1] > hi {
				t.Errorf("class means %v outside the scores' [%v, %v]", b.Means, lo, hi)
			}
			if len(b.Means) != tc.want {
				t.Errorf("%d classes %v, want %d", len(b.Means), b.Edges, tc.want)
			}
			for i, v := range tc.scores {
				if int(y[i]) != b.class(v) {
					t.Fatalf("score %v in class %d, class() says %d", v, y[i], b.class(v))
				}
				for j, w := range tc.scores {
					if v == w && y[i] != y[j] {
						t.Fatalf("score %v in classes %d and %d", v, y[i], y[j])
					}
					if v < w && y[i] > y[j] {
						t.Fatalf("score %v in class %d above %v's %d", v, y[i], w, y[j])
					}
				}
			}
		})
	}
}

func seq(n int, f func(int) float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

// TestForestMonotone: moving the forest's votes from the lowest class to the higher ones
// raises the prediction step by step, continuously, between the lowest and the highest
// class means; no votes at all give the classes' plain mean.
func TestForestMonotone(t *testing.T) {
	b := scoreBins{Edges: []float64{1, 2}, Means: []float64{0.5, 1.5, 3}}
	prev := math.Inf(-1)
	for k := range 101 {
		q := float32(k) / 100
		got := b.expect([]float32{1 - q, q / 2, q / 2})
		if !(got > prev) || got < 0.5 || got > 3 || (k > 0 && got-prev > 0.02) {
			t.Fatalf("votes moved up by %v give %v after %v", q, got, prev)
		}
		prev = got
	}
	if got := b.expect([]float32{0, 0, 0}); math.Abs(got-5.0/3) > 1e-12 {
		t.Errorf("no votes give %v, want the means' mean 5/3", got)
	}
}

// TestForestConformance runs the protocol conformance checks on the forest lane.
func TestForestConformance(t *testing.T) {
	tk := task(t)
	plugintest.Run(t, binary, &plugintest.Options{
		Task: &tk, Cases: sliceCases(t, 4, 1), TrainConfig: forestCfg, CancelConfig: forestCfg,
		NoRounds: "the forest lane grows its trees in one step; it has no steps to resume or split",
	})
}

// TestForestBadCheckpoint: a forest checkpoint that is cut short, whose trees' bytes are
// changed, or whose record does not match its forest is refused with an error saying why.
func TestForestBadCheckpoint(t *testing.T) {
	cases, _, _ := kernelCases(t, 24, 3)
	res, err := iqa{}.Train(context.Background(), &protocol.TrainRequest{Task: task(t), Config: []byte(`{"lane":"forest","trees":4}`),
		Train: cases, WorkDir: t.TempDir(), Seed: 1}, func(*protocol.Progress) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(res.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	man, st, err := ckpt.Read(res.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := parseRecord(res.Checkpoint, man.Train)
	if err != nil {
		t.Fatal(err)
	}
	resave := func(t *testing.T, edit func(r *saved, extra []byte) []byte) string {
		r := *rec
		r.Forest = &scoreBins{Edges: slices.Clone(rec.Forest.Edges), Means: slices.Clone(rec.Forest.Means)}
		extra := edit(&r, slices.Clone(st.Extra))
		p := filepath.Join(t.TempDir(), "bad.ckpt")
		if err := ckpt.Save(p, ckpt.Checkpoint{Train: r, Epoch: 1, Step: 1, Model: empty{}, Extra: extra}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, want string
		path       func(t *testing.T) string
	}{
		{"cut short", "truncated", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "short.ckpt")
			if err := os.WriteFile(p, good[:len(good)-10], 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}},
		{"a changed byte", "corrupt", func(t *testing.T) string {
			b := slices.Clone(good)
			b[len(b)-20] ^= 0xff
			p := filepath.Join(t.TempDir(), "flipped.ckpt")
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}},
		{"no forest", "not an encoded forest", func(t *testing.T) string {
			return resave(t, func(*saved, []byte) []byte { return []byte("not a forest") })
		}},
		{"a class too few", "score classes", func(t *testing.T) string {
			return resave(t, func(r *saved, x []byte) []byte {
				r.Forest.Means, r.Forest.Edges = r.Forest.Means[1:], r.Forest.Edges[1:]
				return x
			})
		}},
		{"descending means", "ascending", func(t *testing.T) string {
			return resave(t, func(r *saved, x []byte) []byte {
				slices.Reverse(r.Forest.Means)
				return x
			})
		}},
		{"no classes", "score classes", func(t *testing.T) string {
			return resave(t, func(r *saved, x []byte) []byte { r.Forest = nil; return x })
		}},
		{"other features", "this build computes", func(t *testing.T) string {
			return resave(t, func(r *saved, x []byte) []byte { r.Features = r.Features[1:]; return x })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := iqa{}.Predict(context.Background(), &protocol.PredictRequest{Checkpoint: tc.path(t), Cases: cases[:2], OutputDir: t.TempDir()})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestForestBadImage: the forest lane refuses a volume in a 2D task, naming the case.
func TestForestBadImage(t *testing.T) {
	cases, _, _ := kernelCases(t, 8, 4)
	v, err := volume.New(volume.Float32, [4]int{8, 8, 3, 1})
	if err != nil {
		t.Fatal(err)
	}
	cases[5].Images = []string{filepath.Join(t.TempDir(), "vol.nii.gz")}
	if err := imageio.Write(cases[5].Images[0], v); err != nil {
		t.Fatal(err)
	}
	_, err = iqa{}.Train(context.Background(), &protocol.TrainRequest{Task: task(t), Config: forestCfg, Train: cases, WorkDir: t.TempDir(), Seed: 1},
		func(*protocol.Progress) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "a 2D task takes single-slice images") || !strings.Contains(err.Error(), cases[5].ID) {
		t.Fatalf("error %v, want one naming %s as a volume in a 2D task", err, cases[5].ID)
	}
}
