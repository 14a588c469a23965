package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"amid/plugins/metrics"
	"amid/plugins/protocol"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// quality is the training time per task of TestQuality; zero skips it. It is a quality
// run, not a unit test: go test -run TestQuality -quality 10m ./plugins/segmentation
var quality = flag.Duration("quality", 0, "train each generated task this long in TestQuality (0: skip)")

// qualityTask is one generated task of TestQuality.
type qualityTask struct {
	name   string
	dims   int
	labels []int
	gen    func(t *testing.T, dir, id string, r *rand.Rand) protocol.Case
	// config adjusts the planned configuration for a CPU run.
	config func(c *config)
}

// TestQuality generates ISLES-, TopCoW- and PUMA-shaped tasks, plans each from its
// fingerprint, trains the first candidate of the wanted lane for -quality of wall time
// (protocol.TrainRequest.TimeLimit) and reports the mean foreground Dice on held-out cases
// through Predict.
func TestQuality(t *testing.T) {
	if *quality <= 0 {
		t.Skip("quality run: set -quality to a time per task")
	}
	// For a CPU budget of minutes: batch 2, half nnU-Net's widths (16 to 160 or 256), steps
	// bounded by the time limit only.
	small := func(c *config) {
		c.Batch, c.Steps, c.Epoch, c.Report = 2, 1<<30, 250, 5
		for i := range c.Widths {
			c.Widths[i] /= 2
		}
	}
	tasks := []qualityTask{
		{"isles-like", 3, []int{0, 1}, islesCase, small},
		{"topcow-like", 3, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}, topcowCase, small},
		{"puma-like", 2, []int{0, 1, 2, 3, 4, 5}, pumaCase, small},
	}
	for _, tk := range tasks {
		t.Run(tk.name, func(t *testing.T) {
			dir := t.TempDir()
			r := rand.New(rand.NewPCG(2026, uint64(len(tk.name))))
			var cases []protocol.Case
			for i := range 20 {
				cases = append(cases, tk.gen(t, dir, fmt.Sprintf("%s%03d", tk.name[:4], i), r))
			}
			train, test := cases[:16], cases[16:]
			fp := qualityFingerprint(t, train, len(tk.labels))
			task := protocol.Task{Kind: "segmentation", Dims: tk.dims}
			pl, err := seg{}.Plan(context.Background(), &protocol.PlanRequest{Fingerprint: fp, Task: task})
			if err != nil {
				t.Fatal(err)
			}
			want := "3d_fullres"
			if tk.dims == 2 {
				want = "2d"
			}
			var c config
			for _, cand := range pl.Candidates {
				if cand.Name == want {
					if c, err = parseConfig(cand.Config); err != nil {
						t.Fatal(err)
					}
					t.Logf("planned %s: %s", cand.Name, cand.Rationale)
				}
			}
			c.Labels = tk.labels
			tk.config(&c)
			b, _ := json.Marshal(c)
			began := time.Now()
			var last *protocol.Progress
			res, err := seg{}.Train(context.Background(), &protocol.TrainRequest{
				Task: task, Config: b, Train: train[:14], Validation: train[14:], WorkDir: t.TempDir(), Seed: 1, TimeLimit: *quality,
			}, func(p *protocol.Progress) error { last = p; return nil })
			if err != nil {
				t.Fatal(err)
			}
			out := t.TempDir()
			pr, err := seg{}.Predict(context.Background(), &protocol.PredictRequest{Task: task, Checkpoint: res.Checkpoint, Cases: test, OutputDir: out})
			if err != nil {
				t.Fatal(err)
			}
			var sum float64
			for i, p := range pr.Predictions {
				got, err := imageio.Read(p.Files[0])
				if err != nil {
					t.Fatal(err)
				}
				ref, err := imageio.Read(test[i].Label)
				if err != nil {
					t.Fatal(err)
				}
				g, _ := classIndex(got, tk.labels)
				w, _ := classIndex(ref, tk.labels)
				d, err := classDice(g, w, metrics.DiceUnion)
				if err != nil {
					t.Fatal(err)
				}
				sum += d
			}
			loss := 0.0
			if last != nil {
				loss = last.Losses["dice_ce"]
			}
			t.Logf("%s: %d steps in %v (batch %d, patch %v, widths %v), loss %.3f, validation %v, held-out mean Dice %.3f over %d cases",
				tk.name, res.Steps, time.Since(began).Round(time.Second), c.Batch, c.Patch, c.Widths, loss, res.Validation, sum/float64(len(test)), len(test))
		})
	}
}

// qualityFingerprint is the plan fingerprint of cases (a single-file image each).
func qualityFingerprint(t *testing.T, cases []protocol.Case, classes int) []byte {
	type cs struct {
		Dims    [3]int     `json:"dims"`
		Spacing [3]float64 `json:"spacing"`
	}
	fp := map[string]any{"modality": "MR", "classes": classes}
	var list []cs
	for _, c := range cases {
		v, err := imageio.Read(c.Images[0])
		if err != nil {
			t.Fatal(err)
		}
		fp["channels"] = v.Dims[3] * len(c.Images)
		if v.Dims[3] == 3 {
			fp["modality"] = "RGB"
		}
		list = append(list, cs{[3]int{v.Dims[2], v.Dims[1], v.Dims[0]}, [3]float64{v.Spacing[2], v.Spacing[1], v.Spacing[0]}})
	}
	fp["cases"] = list
	b, _ := json.Marshal(fp)
	return b
}

// writeCase writes a case's channel images and label as NIfTI (or PNG for 2D RGB).
func writeCase(t testing.TB, dir, id, ext string, label *volume.Volume, images ...*volume.Volume) protocol.Case {
	c := protocol.Case{ID: id, Label: filepath.Join(dir, id+"_label"+ext)}
	for k, v := range images {
		c.Images = append(c.Images, filepath.Join(dir, fmt.Sprintf("%s_%04d%s", id, k, ext)))
		if err := imageio.Write(c.Images[k], v); err != nil {
			t.Fatal(err)
		}
	}
	if err := imageio.Write(c.Label, label); err != nil {
		t.Fatal(err)
	}
	return c
}

// islesCase is a 64×64×32 brain-like phantom of 1 mm voxels with DWI- and ADC-like
// channels: an ellipsoidal brain with grey
// and white matter, 1–3 lesions of radius 2–6 voxels bright in DWI and dark in ADC, noise.
func islesCase(t *testing.T, dir, id string, r *rand.Rand) protocol.Case {
	dims := [4]int{64, 64, 32, 1}
	dwi, _ := volume.New(volume.Float32, dims)
	adc, _ := volume.New(volume.Float32, dims)
	lab, _ := volume.New(volume.Uint8, dims)
	type ball struct {
		c [3]float64
		r float64
	}
	var les []ball
	for range 1 + r.IntN(3) {
		// Inside the brain: within 0.6 of its semi-axes.
		for {
			p := [3]float64{32 + 40*(r.Float64()-0.5), 32 + 48*(r.Float64()-0.5), 16 + 20*(r.Float64()-0.5)}
			if sq((p[0]-32)/24)+sq((p[1]-32)/28)+sq((p[2]-16)/13) < 0.6 {
				les = append(les, ball{p, 2 + 4*r.Float64()})
				break
			}
		}
	}
	dd, ad, lx := dwi.Data.([]float32), adc.Data.([]float32), lab.Data.([]uint8)
	for z := range 32 {
		for y := range 64 {
			for x := range 64 {
				i := (z*64+y)*64 + x
				e := sq((float64(x)-32)/24) + sq((float64(y)-32)/28) + sq((float64(z)-16)/13)
				var d, a float64
				if e < 1 {
					d, a = 100, 800 // white matter
					if e > 0.7 {
						d, a = 120, 1000 // cortex-like rim
					}
					for _, b := range les {
						if math.Sqrt(sq(float64(x)-b.c[0])+sq(float64(y)-b.c[1])+sq(float64(z)-b.c[2])) <= b.r {
							d, a = 220, 450
							lx[i] = 1
						}
					}
				}
				dd[i] = float32(d + 15*r.NormFloat64())
				ad[i] = float32(a + 80*r.NormFloat64())
			}
		}
	}
	return writeCase(t, dir, id, ".nii.gz", lab, dwi, adc)
}

// topcowCase is a 48×48×32 angiography-like volume with 13 labelled vessel segments:
// tubes of radius 1–2 voxels between template points jittered by up to 2 voxels, bright
// on a dim background, each segment its own label 1–13.
func topcowCase(t *testing.T, dir, id string, r *rand.Rand) protocol.Case {
	dims := [4]int{48, 48, 32, 1}
	img, _ := volume.New(volume.Float32, dims)
	lab, _ := volume.New(volume.Uint8, dims)
	// A circle-of-Willis-like ring of 8 segments with 5 branches leaving it.
	ring := [][3]float64{{24, 12, 16}, {34, 16, 16}, {37, 26, 16}, {32, 36, 16}, {24, 38, 16}, {16, 36, 16}, {11, 26, 16}, {14, 16, 16}}
	var segs [][2][3]float64
	for k := range ring {
		segs = append(segs, [2][3]float64{ring[k], ring[(k+1)%len(ring)]})
	}
	for _, k := range []int{0, 2, 4, 6} {
		out := ring[k]
		out[0] += (ring[k][0] - 24) * 0.5
		out[1] += (ring[k][1] - 25) * 0.5
		out[2] += 8
		segs = append(segs, [2][3]float64{ring[k], out})
	}
	segs = append(segs, [2][3]float64{ring[4], {24, 44, 4}})
	px, lx := img.Data.([]float32), lab.Data.([]uint8)
	for i := range px {
		px[i] = float32(20 + 8*r.NormFloat64())
	}
	for k, s := range segs {
		var a, b [3]float64
		for d := range 3 {
			a[d], b[d] = s[0][d]+2*(r.Float64()-0.5), s[1][d]+2*(r.Float64()-0.5)
		}
		rad := 1 + r.Float64()
		for z := range 32 {
			for y := range 48 {
				for x := range 48 {
					p := [3]float64{float64(x), float64(y), float64(z)}
					if segDist(p, a, b) <= rad {
						i := (z*48+y)*48 + x
						px[i] = float32(120 + 10*r.NormFloat64())
						lx[i] = uint8(k + 1)
					}
				}
			}
		}
	}
	return writeCase(t, dir, id, ".nii.gz", lab, img)
}

// segDist is the distance from p to the segment ab.
func segDist(p, a, b [3]float64) float64 {
	var ab, ap [3]float64
	var l2, dot float64
	for d := range 3 {
		ab[d], ap[d] = b[d]-a[d], p[d]-a[d]
		l2 += ab[d] * ab[d]
		dot += ab[d] * ap[d]
	}
	s := 0.0
	if l2 > 0 {
		s = min(max(dot/l2, 0), 1)
	}
	var d2 float64
	for d := range 3 {
		d2 += sq(ap[d] - s*ab[d])
	}
	return math.Sqrt(d2)
}

// pumaCase is a 128×128 RGB tile (8-bit PNG) of 5 tissue classes in Voronoi regions
// around 12 random seeds, each class with its own stain colour and texture, and some
// background (class 0) where no tissue is.
func pumaCase(t *testing.T, dir, id string, r *rand.Rand) protocol.Case {
	const S = 128
	img, _ := volume.New(volume.Uint8, [4]int{S, S, 1, 3})
	lab, _ := volume.New(volume.Uint8, [4]int{S, S, 1, 1})
	colours := [6][3]float64{{235, 235, 240}, {150, 60, 150}, {230, 150, 190}, {120, 40, 90}, {200, 90, 120}, {170, 120, 200}}
	type seed struct {
		x, y float64
		k    int
	}
	var seeds []seed
	for range 12 {
		seeds = append(seeds, seed{S * r.Float64(), S * r.Float64(), r.IntN(6)})
	}
	px, lx := img.Data.([]uint8), lab.Data.([]uint8)
	for y := range S {
		for x := range S {
			best, bd := 0, math.Inf(1)
			for j, s := range seeds {
				if d := math.Hypot(float64(x)-s.x, float64(y)-s.y); d < bd {
					best, bd = j, d
				}
			}
			k := seeds[best].k
			lx[y*S+x] = uint8(k)
			// Texture: nuclei-like dark dots for the tumour-like classes 1 and 3.
			tex := 0.0
			if (k == 1 || k == 3) && (x*7+y*13)%11 < 2 {
				tex = -50
			}
			for c := range 3 {
				v := colours[k][c] + tex + 18*r.NormFloat64()
				px[(y*S+x)*3+c] = uint8(min(max(v, 0), 255))
			}
		}
	}
	return writeCase(t, dir, id, ".png", lab, img)
}
