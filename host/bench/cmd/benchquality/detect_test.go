package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"amid/assets/realdata"
	"amid/host/task"
	"amid/plugins/taskspec"
	"amid/viewer/imageio"
)

// The detection task written from the real cache loads; its boxes lie inside their
// images; its training and test slices are apart and every class shows in both; each
// left twin's box lies left of the midline and each right twin's right of it; and its
// shortcuts score within [0, 1], the best last.
func TestDetectionTask(t *testing.T) {
	rel := iniaImage
	cache := strings.TrimSuffix(realdata.Path(t, rel), rel)
	realdata.Path(t, iniaMaps)
	dir := t.TempDir()
	sc, err := writeFamily(context.Background(), cache, dir, detectionTask)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(filepath.Join(dir, "task.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	spec := tk.Spec()
	if spec.Kind != taskspec.Detection || len(spec.Attributes) != 1 {
		t.Fatalf("kind %s with %d attributes, want detection with one", spec.Kind, len(spec.Attributes))
	}
	names := spec.Attributes[0].Classes
	_, all, err := cutBoxes(cache)
	if err != nil {
		t.Fatal(err)
	}
	train, test := splitBoxes(all)
	seen := [2]map[int]int{{}, {}}
	trained := map[int]bool{}
	for part, cases := range [2][]boxSlice{train, test} {
		sub, labs := "train/images", "train/labels"
		if part == 1 {
			sub, labs = "test/images", "answers"
		}
		for _, s := range cases {
			if part == 0 {
				trained[s.At] = true
			} else if trained[s.At] {
				t.Errorf("slice %d is a training and a test case", s.At)
			}
			img, err := imageio.Read(filepath.Join(dir, sub, s.ID+".png"))
			if err != nil {
				t.Fatal(err)
			}
			ann, err := taskspec.ReadAnnotation(filepath.Join(dir, labs, s.ID+".json"), spec)
			if err != nil {
				t.Fatal(err)
			}
			w, h := float64(img.Dims[0]), float64(img.Dims[1])
			for _, b := range ann.Boxes {
				c := b.Attrs[boxAttr]
				seen[part][c]++
				if b.X < 0 || b.Y < 0 || b.X+b.W > w || b.Y+b.H > h || b.W*b.H < minBoxPixels {
					t.Errorf("%s: box %+v of %s is outside the %v×%v image or under %d pixels", s.ID, b, names[c], w, h, minBoxPixels)
				}
				// The INIA19 grid is symmetric about its middle column: the left box
				// ends left of it, the right one starts right of it.
				if left := strings.HasPrefix(names[c], "left"); left && b.X+b.W > w/2 || !left && b.X < w/2 {
					t.Errorf("%s: box %+v of %s lies on the wrong side of the midline (x = %v)", s.ID, b, names[c], w/2)
				}
			}
		}
	}
	for c, n := range names {
		if seen[0][c] == 0 || seen[1][c] == 0 {
			t.Errorf("class %s has %d training and %d test boxes", n, seen[0][c], seen[1][c])
		}
	}
	t.Logf("%d training and %d test slices; boxes per class in train %v, in test %v", len(train), len(test), seen[0], seen[1])
	if len(sc) < 3 || sc[len(sc)-1].Name != "best" {
		t.Fatalf("shortcuts %+v: want at least two and the best last", sc)
	}
	for _, s := range sc {
		if !(s.Score >= 0 && s.Score <= 1) {
			t.Errorf("shortcut %s scores %v, outside [0, 1]", s.Name, s.Score)
		}
		t.Logf("shortcut %-14s %.4f  %s", s.Name, s.Score, s.About)
	}
}
