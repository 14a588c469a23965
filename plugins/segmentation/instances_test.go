package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"amid/plugins/plugintest"
	"amid/plugins/protocol"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// cellSide is the edge of the generated cell images.
const cellSide = 48

// cellCases writes n cellSide² images of 6 cells each — discs of radius 4–6 at least 1.5
// pixels apart at the rim (often nearly touching), brightest at the centre — as 8-bit PNG
// with their instance maps as 16-bit TIFF (ids 1–6).
func cellCases(t *testing.T, n int, seed uint64) []protocol.Case {
	t.Helper()
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(seed, 5))
	var out []protocol.Case
	for i := range n {
		img, _ := volume.New(volume.Uint8, [4]int{cellSide, cellSide, 1, 1})
		lab, _ := volume.New(volume.Uint16, [4]int{cellSide, cellSide, 1, 1})
		type cell struct{ x, y, r float64 }
		var cells []cell
		for len(cells) < 6 {
			c := cell{6 + (cellSide-12)*r.Float64(), 6 + (cellSide-12)*r.Float64(), 4 + 2*r.Float64()}
			ok := true
			for _, o := range cells {
				ok = ok && math.Hypot(c.x-o.x, c.y-o.y) > c.r+o.r+1.5
			}
			if ok {
				cells = append(cells, c)
			}
		}
		px, lx := img.Data.([]uint8), lab.Data.([]uint16)
		for y := range cellSide {
			for x := range cellSide {
				v := 60 + 12*r.NormFloat64()
				for k, c := range cells {
					if d := math.Hypot(float64(x)-c.x, float64(y)-c.y); d <= c.r {
						v += 120 * (1 - 0.6*d*d/(c.r*c.r))
						lx[y*cellSide+x] = uint16(k + 1)
					}
				}
				px[y*cellSide+x] = uint8(min(max(v, 0), 255))
			}
		}
		id := fmt.Sprintf("cell%02d", i)
		c := protocol.Case{ID: id, Images: []string{filepath.Join(dir, id+".png")}, Label: filepath.Join(dir, id+"_label.tif")}
		if err := imageio.Write(c.Images[0], img); err != nil {
			t.Fatal(err)
		}
		if err := imageio.Write(c.Label, lab); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// cellSpec is a NeurIPS-CellSeg-like task spec: instances, predictions as TIFF.
var cellSpec = []byte(`{"id":"cells","kind":"segmentation","dims":2,"modality":"microscopy","instances":true,"output":".tif","metric":"f1"}`)

// TestInstancesTask plans, trains and predicts an instance task through the built plugin:
// the plan asks for instances with classes background, interior and boundary; training
// reports instance F1 on a held-out image; the prediction is a 16-bit TIFF of instance ids
// with about as many instances as cells.
func TestInstancesTask(t *testing.T) {
	p := plugintest.Start(t, binary)
	task := protocol.Task{Kind: "segmentation", Dims: 2, Metric: "f1", Spec: cellSpec}
	// The profile counts instance ids as classes; the plan replaces them with 3.
	fp := []byte(fmt.Sprintf(`{"modality":"microscopy","channels":1,"classes":7,"class_frequency":[0.8,0.04,0.04,0.03,0.03,0.03,0.03],"cases":[{"dims":[1,%d,%d],"spacing":[1,1,1]}]}`, cellSide, cellSide))
	pl, err := p.Plan(context.Background(), &protocol.PlanRequest{Fingerprint: fp, Task: task})
	if err != nil {
		t.Fatal(err)
	}
	c, err := parseConfig(pl.Candidates[0].Config)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Instances || len(c.Labels) != 3 || c.Lane != "2d" {
		t.Fatalf("planned %+v", c)
	}
	cases := cellCases(t, 9, 1)
	cfg := fmt.Appendf(nil, `{"lane":"2d","patch":[1,%d,%d],"batch":4,"widths":[8,16,32],"modality":"mr","labels":[0,1,2],"instances":true,`+
		`"steps":150,"steps_per_epoch":150,"report_every":50,"learning_rate":0.01}`, cellSide, cellSide)
	res, err := p.Train(context.Background(), &protocol.TrainRequest{Task: task, Config: cfg, Train: cases[:8], Validation: cases[8:], WorkDir: t.TempDir(), Seed: 1},
		func(*protocol.Progress) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("instances after 150 steps: %v", res.Validation)
	// 0.8: 6 bright cells, some nearly touching, are separated after 150 steps (F1 1 here):
	// one cell merged or missed gives 0.83.
	if f := res.Validation["f1"]; !(f >= 0.8) {
		t.Errorf("validation instance F1 %v, want ≥ 0.8", f)
	}
	out := t.TempDir()
	pr, err := p.Predict(context.Background(), &protocol.PredictRequest{Task: task, Checkpoint: res.Checkpoint, Cases: cases[8:], OutputDir: out})
	if err != nil {
		t.Fatal(err)
	}
	if got := pr.Predictions[0].Files[0]; got != filepath.Join(out, "cell08.tif") {
		t.Fatalf("prediction %s, want cell08.tif", got)
	}
	lab, err := imageio.Read(pr.Predictions[0].Files[0])
	if err != nil {
		t.Fatal(err)
	}
	ids := map[float64]bool{}
	for i := range lab.NumVoxels() {
		if v := lab.AtIndex(i); v > 0 {
			ids[v] = true
		}
	}
	if lab.DType() != volume.Uint16 || len(ids) < 4 || len(ids) > 8 {
		t.Errorf("prediction of type %v with %d instances, want uint16 and about 6", lab.DType(), len(ids))
	}
}

// TestPlanSpec plans with a task spec: its label values (unsorted, without background)
// become the configuration's labels, background first; a count that disagrees with the
// fingerprint and a malformed spec are errors.
func TestPlanSpec(t *testing.T) {
	fp, err := os.ReadFile(filepath.Join("plan", "testdata", "isles_like.json"))
	if err != nil {
		t.Fatal(err)
	}
	plan := func(spec string) (*protocol.PlanResponse, error) {
		return seg{}.Plan(context.Background(), &protocol.PlanRequest{Fingerprint: fp, Task: protocol.Task{Kind: "segmentation", Dims: 3, Spec: []byte(spec)}})
	}
	r, err := plan(`{"id":"isles","kind":"segmentation","dims":3,"labels":[{"value":4,"name":"lesion"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, cand := range r.Candidates {
		var c config
		if err := json.Unmarshal(cand.Config, &c); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(c.Labels) != "[0 4]" || (len(c.Widths) > 0 && !c.DeepSupervision) {
			t.Errorf("%s: labels %v, deep supervision %v; want [0 4] and on", cand.Name, c.Labels, c.DeepSupervision)
		}
	}
	if _, err := plan(`{"id":"isles","kind":"segmentation","dims":3,"labels":[{"value":1,"name":"a"},{"value":2,"name":"b"}]}`); err == nil {
		t.Error("3 labels for a 2-class fingerprint were planned")
	}
	if _, err := plan(`{"kind":"segmentation","dims":4}`); err == nil {
		t.Error("a malformed spec was planned")
	}
}
