package synth

import (
	"os"
	"path/filepath"
	"testing"

	"amid/host/task"
)

func TestHeadCT(t *testing.T) {
	ct, lab, err := HeadCT(1, [3]int{64, 64, 24}, [3]float64{3.6, 3.6, 7})
	if err != nil {
		t.Fatal(err)
	}
	if err := ct.Validate(); err != nil {
		t.Fatal(err)
	}
	counts, ok := lab.Labels(256)
	if !ok || len(counts) != 6 {
		t.Fatalf("labels %v: want all 6 tissue classes present", counts)
	}
	// Mean HU per label must sit near the tissue's nominal value (noise σ = 6 HU).
	sum := map[int64]float64{}
	hu := ct.Data.([]int16)
	for i, l := range lab.Data.([]uint8) {
		sum[int64(l)] += float64(hu[i])
	}
	// Ranges: the nominal HU of headTissue ± a margin for noise and partial coverage.
	want := map[int64][2]float64{
		Background: {-1001, -990}, SoftTissue: {35, 45}, Bone: {600, 1600},
		Brain: {28, 40}, Ventricle: {0, 10}, Haemorrhage: {58, 72},
	}
	for _, c := range counts {
		mean := sum[c.Value] / float64(c.Count)
		if r := want[c.Value]; mean < r[0] || mean > r[1] {
			t.Errorf("label %d mean %.1f HU outside %v", c.Value, mean, r)
		}
	}
	// Deterministic for a seed, different across seeds.
	ct2, _, _ := HeadCT(1, [3]int{64, 64, 24}, [3]float64{3.6, 3.6, 7})
	ct3, _, _ := HeadCT(2, [3]int{64, 64, 24}, [3]float64{3.6, 3.6, 7})
	same, diff := true, false
	for i, v := range ct.Data.([]int16) {
		same = same && v == ct2.Data.([]int16)[i]
		diff = diff || v != ct3.Data.([]int16)[i]
	}
	if !same || !diff {
		t.Fatalf("determinism: same seed equal=%v, other seed differs=%v", same, diff)
	}
}

func TestDemo(t *testing.T) {
	dir := t.TempDir()
	if err := Demo(dir, 4, 1); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(filepath.Join(dir, "task.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := tk.Resolve(dir)
	if err != nil {
		t.Fatal(err)
	}
	// 4 training cases and max(4/4, 1) = 1 test case.
	if len(d.Train) != 4 || len(d.Test) != 1 || d.Test[0].ID != "head005" {
		t.Errorf("%d train, %d test cases (%v)", len(d.Train), len(d.Test), d.Test)
	}
	if _, err := os.Stat(filepath.Join(dir, "answers", "head005_seg.nii.gz")); err != nil {
		t.Errorf("test answer: %v", err)
	}
	if err := Demo(t.TempDir(), 1, 1); err == nil {
		t.Error("a demo with one training case was accepted")
	}
}
