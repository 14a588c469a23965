package taskinit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"amid/host/task"
)

// maxFuzzFiles bounds the files a fuzzed listing writes: enough for two folders of a
// few cases each, few enough to write in a millisecond or so.
const maxFuzzFiles = 24

// FuzzGuess writes a folder of the files a listing names (one relative path a line; PNGs
// as real images, .txt as a YOLO line, .json as an annotation, the rest empty) and guesses
// its task: it never panics, every refusal is one line, and a guess parses and finds its
// training cases.
func FuzzGuess(f *testing.F) {
	for _, seed := range []string{
		"imagesTr/a_0000.nii.gz\nimagesTr/b_0000.nii.gz\nlabelsTr/a.nii.gz\nlabelsTr/b.nii.gz\nimagesTs/c_0000.nii.gz",
		"train/a_img.png\ntrain/a_seg.png\ntrain/b_img.png\ntrain/b_seg.png\ntest/c_img.png",
		"images/train/a.png\nimages/train/b.png\nlabels/train/a.txt\nlabels/train/b.txt\nimages/test/c.png\nclasses.txt",
		"train/CT/a.png\ntrain/MR/b.png\ntest/c.png",
		"train/images/a.png\ntrain/images/b.png\ntrain/labels/a.json\ntrain/labels/b.json\ntest/images/c.png",
		"images/a.png\nimages/b.png\ntrain.csv\ntest/c.png",
		"x/y/z/w/v/u/t/s.png\n../a.png\n/abs.png\n{id}.png\ntrainTr/Ts.png",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, listing string) {
		dir := t.TempDir()
		n := 0
		for _, p := range strings.Split(listing, "\n") {
			p = strings.TrimSpace(p)
			if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || strings.Contains(p, "\x00") || len(p) > 100 {
				continue
			}
			if n++; n > maxFuzzFiles {
				break
			}
			full := filepath.Join(dir, filepath.FromSlash(p))
			if r, err := filepath.Rel(dir, full); err != nil || strings.HasPrefix(r, "..") || r == "." {
				continue
			}
			if os.MkdirAll(filepath.Dir(full), 0o755) != nil {
				continue
			}
			var b []byte
			switch strings.ToLower(filepath.Ext(p)) {
			case ".png":
				writePNG(t, full, gradient(n))
				continue
			case ".txt":
				b = []byte("0 0.5 0.5 0.25 0.25\n")
			case ".json":
				// Each kind of annotation by turns, a score of null among them.
				b = []byte([]string{`{"boxes": [{"x": 1, "y": 1, "w": 2, "h": 2, "score": 1}]}`, `{"score": null}`, `{"classes": {"a": 1}}`, `{"points": [{"x": 1, "y": 1, "class": "c"}]}`, `{"score": 2.5}`}[n%5])
			case ".csv":
				b = []byte("id,label\na,CT\nb,MR\n")
			}
			_ = os.WriteFile(full, b, 0o644)
		}
		r, err := Guess(dir, Options{})
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is not one line", err)
			}
			return
		}
		tk, err := task.Parse(r.YAML)
		if err != nil {
			t.Fatalf("the guess does not parse: %v\n%s", err, r.YAML)
		}
		if ds, err := tk.Resolve(dir); err != nil || len(ds.Train) == 0 || len(ds.Train) != r.Train {
			t.Fatalf("the guess finds %v training cases (said %d): %v", ds, r.Train, err)
		}
	})
}
