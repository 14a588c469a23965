package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/csv"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"amid/assets/ci"
	"amid/assets/realdata"
	"amid/host/task"
	"amid/plugins/taskspec"
)

// The DICOM modality task, written from the real-image cache: it loads; no series and no
// image is in both train and test; every class is in both; the images are 8-bit grey PNGs
// that hold nothing but their pixels; the shortcuts score in [0, 1]; and known files have
// the class their Modality says (octave-dicom's ankle is CT, ami.js's echo US rare).
func TestModalityTask(t *testing.T) {
	ankle := "root/usr/share/octave/packages/dicom-0.5.1/imdata/CT-MONO2-16-ankle.dcm"
	realdata.Path(t, ankle) // skips the test without the cache
	ci.NotUnderRace(t, "floats-alt")
	rd, err := realdata.Dir()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sc, err := writeFamily(context.Background(), rd, dir, classificationTask)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(filepath.Join(dir, "task.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	at, ok := tk.Spec().Attribute(modalityAttr)
	if !ok {
		t.Fatalf("the task has no attribute %s", modalityAttr)
	}
	classes := at.Classes

	// sources.csv: each kept file's case, split and class.
	b, err := os.ReadFile(filepath.Join(dir, "sources.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	splitOf := map[string]string{} // series: split
	inSplit := map[string]map[string]bool{"train": {}, "test": {}}
	classOf := map[string]string{} // file: class
	kept := 0
	for _, r := range rows[1:] {
		file, series, id, split, class := r[0], r[2], r[3], r[4], r[5]
		if id == "" {
			continue
		}
		kept++
		classOf[file] = class
		if s, ok := splitOf[series]; ok && s != split {
			t.Errorf("series %s is in both train and test (%s)", series, file)
		}
		splitOf[series] = split
		inSplit[split][class] = true
		var want []string
		for _, p := range []string{"images/" + id + ".png", "labels/" + id + ".json"} {
			want = append(want, filepath.Join(dir, split, p))
		}
		if split == "test" {
			want[1] = filepath.Join(dir, "answers", id+".json")
		}
		checkPNG(t, want[0])
		a, err := taskspec.ReadAnnotation(want[1], tk.Spec())
		if err != nil {
			t.Fatal(err)
		}
		if got := classes[a.Classes[modalityAttr]]; got != class {
			t.Errorf("%s: its label says %s, sources.csv %s", file, got, class)
		}
	}
	for _, c := range classes {
		for _, s := range []string{"train", "test"} {
			if !inSplit[s][c] {
				t.Errorf("class %s has no %s image", c, s)
			}
		}
	}
	for file, want := range map[string]string{ankle: "CT", "npm/ami.js-0.33.0/package/data/dicom/US-RGB-8-esopecho.dcm": rareClass} {
		if classOf[file] != want {
			t.Errorf("%s: class %q, want %s", file, classOf[file], want)
		}
	}
	// The same image in train and test would be a leak whatever the series: no test image
	// is within sameImage of a training image of its size.
	imgs := map[string][]*image.Gray{}
	for _, s := range []string{"train", "test"} {
		ps, err := filepath.Glob(filepath.Join(dir, s, "images", "*.png"))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			img, err := readGrey(p)
			if err != nil {
				t.Fatal(err)
			}
			imgs[s] = append(imgs[s], img)
		}
	}
	for _, a := range imgs["test"] {
		for _, b := range imgs["train"] {
			if a.Rect != b.Rect {
				continue
			}
			d := 0
			for i := range a.Pix {
				d += max(int(a.Pix[i])-int(b.Pix[i]), int(b.Pix[i])-int(a.Pix[i]))
			}
			if d < sameImage*len(a.Pix) {
				t.Errorf("a %v test image is within %d grey levels of a training image", a.Rect.Size(), sameImage)
			}
		}
	}
	if len(sc) != 4 || sc[3].Name != "best" {
		t.Fatalf("shortcuts %+v: want majority, size, histogram and best", sc)
	}
	for _, s := range sc {
		if s.Score < 0 || s.Score > 1 {
			t.Errorf("shortcut %s scores %v, outside [0, 1]", s.Name, s.Score)
		}
	}
	t.Logf("%d images, classes %v; shortcuts %+v", kept, classes, sc)
}

// checkPNG fails the test unless the file at p is an 8-bit grey PNG whose chunks are
// only IHDR, IDAT and IEND (no text, no pixel spacing, nothing of a DICOM header).
func checkPNG(t *testing.T, p string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("DICM")) {
		t.Errorf("%s holds the DICOM magic", p)
	}
	if _, err := readGrey(p); err != nil {
		t.Fatal(err)
	}
	for off := 8; off+8 <= len(b); {
		n, typ := int(binary.BigEndian.Uint32(b[off:])), string(b[off+4:off+8])
		if typ != "IHDR" && typ != "IDAT" && typ != "IEND" {
			t.Errorf("%s has a %s chunk", p, typ)
		}
		off += 12 + n
	}
}

// readGrey decodes the PNG at p, which must be 8-bit grey.
func readGrey(p string) (*image.Gray, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	g, ok := img.(*image.Gray)
	if !ok {
		return nil, &os.PathError{Op: "decode", Path: p, Err: os.ErrInvalid}
	}
	return g, nil
}
