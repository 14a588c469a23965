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

// The reporting detection task written from the real cache loads; its boxes lie inside
// their images; its training and test slices are apart and every class shows in both;
// each left twin's box lies left of the midline and each right twin's right of it; and
// its shortcuts score within [0, 1], the best last.
func TestDetectionTask(t *testing.T) {
	cache := strings.TrimSuffix(realdata.Path(t, iniaImage), iniaImage)
	realdata.Path(t, iniaMaps)
	if detectionTask.set() != reporting {
		t.Errorf("%s is a %s task, want reporting", detectionTask.ID, detectionTask.set())
	}
	cb := checkBoxTask(t, cache, iniaBoxes, detectionTask)
	// 7.5 mm² of 0.5 × 0.5 mm pixels, the 30 pixels the task had before it had a twin.
	if cb.MinPixels != 30 {
		t.Errorf("the smallest box holds %d pixels, want 30", cb.MinPixels)
	}
}

// The tuning detection task, its twin on ch2 with AAL's deep grey nuclei, passes the same
// checks; its classes are AAL's four nuclei by the values aal.nii.txt gives them, each
// left twin before its right, and its smallest cross-section is the reporting task's area
// in its own 1 mm pixels.
func TestCh2DetectionTask(t *testing.T) {
	cache := strings.TrimSuffix(realdata.Path(t, ch2Image), ch2Image)
	realdata.Path(t, aalLabels)
	realdata.Path(t, aalNames)
	if ch2DetectionTask.set() != tuning {
		t.Errorf("%s is a %s task, want tuning", ch2DetectionTask.ID, ch2DetectionTask.set())
	}
	regions, err := readAAL(cache)
	if err != nil {
		t.Fatal(err)
	}
	aal := map[int]string{}
	for _, r := range regions {
		aal[r.Value] = r.Name
	}
	classes, err := ch2Boxes.classes(cache)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Caudate_L", "Caudate_R", "Putamen_L", "Putamen_R", "Pallidum_L", "Pallidum_R", "Thalamus_L", "Thalamus_R"}
	if len(classes) != len(want) {
		t.Fatalf("%d classes, want %d", len(classes), len(want))
	}
	for i, c := range classes {
		if aal[c.Value] != want[i] || c.Left != strings.HasSuffix(want[i], "_L") {
			t.Errorf("class %d %q is AAL value %d (%s), left %v; want %s", i, c.Name, c.Value, aal[c.Value], c.Left, want[i])
		}
	}
	cb := checkBoxTask(t, cache, ch2Boxes, ch2DetectionTask)
	if cb.MinPixels != 8 {
		t.Errorf("the smallest box holds %d pixels, want 8 (7.5 mm² at 1 mm)", cb.MinPixels)
	}
}

// checkBoxTask writes the detection task bt (its family f) from the cache and checks it:
// it loads as a detection task with one attribute, bt's classes in order; its boxes lie
// inside their images and hold the task's smallest area; its training and test slices
// are apart and every class shows in both; each left twin's box lies left of the
// midline and each right twin's right of it; and its shortcuts score within [0, 1], the
// best last.
func checkBoxTask(t *testing.T, cache string, bt boxTask, f family) *boxCut {
	t.Helper()
	dir := t.TempDir()
	sc, err := writeFamily(context.Background(), cache, dir, f)
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
	cb, err := cutBoxes(cache, bt)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != len(cb.Classes) {
		t.Fatalf("task.yaml has %d classes, the task %d", len(names), len(cb.Classes))
	}
	for i, c := range cb.Classes {
		if names[i] != c.Name {
			t.Errorf("task.yaml's class %d is %q, want %q", i, names[i], c.Name)
		}
	}
	train, test := splitBoxes(cb.Slices)
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
				if b.X < 0 || b.Y < 0 || b.X+b.W > w || b.Y+b.H > h || b.W*b.H < float64(cb.MinPixels) {
					t.Errorf("%s: box %+v of %s is outside the %v×%v image or under %d pixels", s.ID, b, names[c], w, h, cb.MinPixels)
				}
				// Both grids are symmetric about their middle, w/2 in box coordinates:
				// the left box ends left of it, the right one starts right of it, each
				// reaching at most half a pixel across, into the middle column of an
				// odd width (ch2's column 90, x = 0, which AAL's two thalami both
				// reach on a dozen slices).
				if left := cb.Classes[c].Left; left && b.X+b.W > w/2+0.5 || !left && b.X < w/2-0.5 {
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
	t.Logf("%s: %d training and %d test slices; boxes per class in train %v, in test %v", bt.ID, len(train), len(test), seen[0], seen[1])
	if len(sc) < 3 || sc[len(sc)-1].Name != "best" {
		t.Fatalf("shortcuts %+v: want at least two and the best last", sc)
	}
	for _, s := range sc {
		if !(s.Score >= 0 && s.Score <= 1) {
			t.Errorf("shortcut %s scores %v, outside [0, 1]", s.Name, s.Score)
		}
		t.Logf("shortcut %-14s %.4f  %s", s.Name, s.Score, s.About)
	}
	return cb
}
