package profile

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"amid/host/task"
	"amid/plugins/taskspec"
	"amid/viewer/dicom"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// TestAdmit: cases given to a trained model, checked against the fingerprint Profile
// made of its training cases (writeCase: 16×16×4 at 0.8 × 0.8 × 4 mm, median intensity 0,
// 99.5th percentile near 101).
func TestAdmit(t *testing.T) {
	dir := t.TempDir()
	var train []task.Case
	for i := range 3 {
		train = append(train, writeCase(t, dir, fmt.Sprintf("c%d", i), i, [3]float64{0.8, 0.8, 4}))
	}
	tk := segTask()
	fp, _, err := Profile(context.Background(), tk, &task.Dataset{Root: dir, Train: train}, labelsOf(train))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, dims [4]int, spacing [3]float64, value float64) string {
		v, _ := volume.New(volume.Int16, dims)
		v.Spacing = spacing
		for i := range v.Len() {
			v.SetIndex(i, value)
		}
		p := filepath.Join(dir, name+".nii.gz")
		if err := imageio.Write(p, v); err != nil {
			t.Fatal(err)
		}
		return p
	}
	like := task.Case{Images: []string{write("like", [4]int{20, 18, 5, 1}, [3]float64{0.8, 0.8, 4}, 0)}}
	if w, err := Admit(fp, tk, like); err != nil || len(w) != 0 {
		t.Errorf("a case like the training cases: %q %v", w, err)
	}
	// One protocol step past the training spacing (5 mm for 4: 1.25×) passes; 6 mm does not.
	step := task.Case{Images: []string{write("step", [4]int{16, 16, 4, 1}, [3]float64{0.8, 0.8, 5}, 0)}}
	if w, err := Admit(fp, tk, step); err != nil || len(w) != 0 {
		t.Errorf("5 mm slices: %q %v", w, err)
	}
	far := task.Case{Images: []string{write("far", [4]int{16, 16, 4, 1}, [3]float64{0.8, 0.8, 6}, 1000)}}
	w, err := Admit(fp, tk, far)
	if err != nil || len(w) != 2 || !strings.Contains(w[0], "the spacing along Z, 6 mm, lies outside the training spacings, 4 to 4 mm") ||
		!strings.Contains(w[1], "the median intensity, 1000, lies outside") {
		t.Errorf("6 mm slices, intensity 1000: %q %v", w, err)
	}
	for _, c := range []struct {
		name string
		tk   func(*task.Task)
		c    task.Case
		want string
	}{
		{"a slice", nil, task.Case{Images: []string{write("slice", [4]int{16, 16, 1, 1}, [3]float64{0.8, 0.8, 4}, 0)}}, "the model reads volumes, and the image is one slice"},
		{"a volume for a 2D model", func(t *task.Task) { t.Dims = 2 }, like, "the model reads 2D images, and the image is a volume of 5 slices"},
		{"two images", nil, task.Case{Images: []string{like.Images[0], like.Images[0]}}, "the model reads 1 channels, and the case has 2 images"},
		{"an MR series for a CT model", nil, task.Case{Images: like.Images, Series: []*dicom.SeriesInfo{{Modality: "MR"}}}, "the model was trained on CT, and the DICOM series of image 1 is MR"},
		{"no image", nil, task.Case{}, "the case has no image"},
		{"unreadable", nil, task.Case{Images: []string{filepath.Join(dir, "none.nii.gz")}}, "its first image cannot be read"},
	} {
		tk := segTask()
		if c.tk != nil {
			c.tk(tk)
		}
		_, err := Admit(fp, tk, c.c)
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
	}
	// An RGB model reads three components of one image.
	rgb := &Fingerprint{Channels: 3}
	two := &task.Task{Kind: taskspec.Classification, Dims: 2}
	gray := task.Case{Images: []string{write("gray", [4]int{8, 8, 1, 1}, [3]float64{1, 1, 1}, 0)}}
	if _, err := Admit(rgb, two, gray); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "the model reads 3 channels, and the image has 1") {
		t.Errorf("a gray image for an RGB model: %v", err)
	}
}
