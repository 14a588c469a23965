package predictions

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"amid/plugins/compute"
	"amid/plugins/taskspec"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// Compare reads each kind of prediction file and applies compute.Table: a label map
// with one of 100 foreground voxels flipped fails (Dice 198/199 < 0.999) while the same map
// passes; scores within 1e-4 of the range pass and beyond fail; classes must be equal.
func TestCompare(t *testing.T) {
	dir := t.TempDir()
	labels := func(name string, flip bool) string {
		v, err := volume.New(volume.Uint8, [4]int{20, 20, 1, 1})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 100 {
			v.SetIndex(i, 1)
		}
		if flip {
			v.SetIndex(0, 0)
		}
		p := filepath.Join(dir, name)
		if err := imageio.Write(p, v); err != nil {
			t.Fatal(err)
		}
		return p
	}
	json := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	seg := &taskspec.Spec{Kind: taskspec.Segmentation}
	iqa := &taskspec.Spec{Kind: taskspec.IQA, Dims: 2, Score: &taskspec.ScoreRange{Min: 0, Max: 4}}
	for _, tc := range []struct {
		name       string
		spec       *taskspec.Spec
		orig, re   string
		ok         bool
		worstWords string
	}{
		{"same labels", seg, labels("a.nii.gz", false), labels("b.nii.gz", false), true, "Dice 1"},
		{"a flipped voxel", seg, labels("c.nii.gz", false), labels("d.nii.gz", true), false, "Dice 0.994975"},
		{"close scores", iqa, json("s1.json", `{"score": 2.0}`), json("s2.json", `{"score": 2.0003}`), true, "7.5e-05"},
		{"far scores", iqa, json("s3.json", `{"score": 2.0}`), json("s4.json", `{"score": 2.001}`), false, "0.00025"},
	} {
		ag := compute.NewAgreement(compute.Table)
		if err := Compare(ag, tc.spec, tc.name, tc.orig, tc.re); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if ag.OK() != tc.ok || !strings.Contains(ag.Summary(), tc.worstWords) {
			t.Errorf("%s: ok %v (%v), summary %q", tc.name, ag.OK(), ag.Problems, ag.Summary())
		}
	}
}
