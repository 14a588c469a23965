// Package ingest turns a task's raw training labels into the canonical per-kind labels
// that plugins understand (amid/plugins/taskspec): a label image for segmentation, the
// target image for enhancement, and a taskspec.Annotation JSON for detection,
// classification and image quality.
//
// Labels takes the cases task.Resolve found and returns, per case id, the file a plugin
// should be given as protocol.Case.Label. Label images and annotation files are checked
// and passed through; every other format is converted into the output folder:
//
//   - puma-tissue: GeoJSON polygons rasterised to an 8-bit PNG label map on the image's
//     grid, as ReX-MLE rasterises the PUMA tissue ground truth (Pillow's polygon fill,
//     exterior rings in file order, later polygons over earlier ones, holes ignored);
//   - puma-nuclei: GeoJSON nucleus polygons to points at their centroid, with the class
//     names of the task (track 1 or track 2 mapping, as the grader's ground truth has them);
//   - topcow-roi: the ROI text file to a 3D box (minimum corner and size, in voxels);
//   - topcow-edges: the edge YAML to one class per attribute;
//   - dentex-coco: the COCO JSON to boxes per image with the three category ids;
//   - csv: the table's value per case to a score; for a classification, each attribute's
//     class from its value column (a class name, without regard to case, or a class
//     index) or from one-hot columns (exactly one set a row), every row naming a case;
//   - folder: the class folder of a case's images (task's {class}) to its class;
//   - yolo: a YOLO .txt (class cx cy w h, normalised) to boxes in pixels of the case's
//     image, each class through the label source's class list; voc: a Pascal VOC XML's
//     objects (name, bndbox xmin ymin xmax ymax) to boxes; every box inside the image;
//   - dicom: a DICOM SEG or RTSTRUCT to a label map on the grid of the case's image (a
//     DICOM series), its segments or ROIs matched with the task's labels through the
//     label source's names, else by code, else by name (amid/viewer/dicom/seg and
//     amid/viewer/dicom/rtstruct say how frames are placed and contours filled).
//
// Converted files are named <case id>.png, <case id>.json or <case id>.nii.gz. Beside each lies
// <name>.source, the hash of everything it was made from; a later call that finds the same
// hash keeps the file. Every unusable label is an error naming its file.
package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"amid/assets/fileio"
	"amid/host/task"
	"amid/plugins/taskspec"
	"amid/viewer/imageio"
	"amid/viewer/metaimage"
	"amid/viewer/nifti"
	"amid/viewer/volume"
)

// ErrLabel marks a label file that cannot be used.
var ErrLabel = errors.New("unusable label")

// MaxFileBytes bounds a raw label file (GeoJSON, COCO, CSV, ROI, YAML) that Labels reads.
const MaxFileBytes = 256 << 20

// version changes whenever a converter's output changes, so older converted files are
// made again.
const version = "ingest/1"

// Labels returns the canonical label of every case, by case id, converting raw labels into
// outDir where the task's label format needs it. Cases without a label are an error.
func Labels(ctx context.Context, t *task.Task, cases []task.Case, outDir string) (map[string]string, error) {
	src := t.Data.Train.Label
	format := src.Format
	if format == "" {
		format = task.LabelImage
	}
	conv := &converter{t: t, spec: t.Spec(), out: outDir, tables: map[string]any{}, sums: map[string][]byte{}, raws: map[string][]byte{}}
	if format != task.LabelImage && format != task.LabelAnnotation {
		if err := os.MkdirAll(outDir, 0o755); err != nil {
			return nil, fmt.Errorf("ingest: %w", err)
		}
	}
	res := make(map[string]string, len(cases))
	for _, c := range cases {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if c.Label == "" {
			return nil, fmt.Errorf("ingest: %w: case %s has no label file", ErrLabel, c.ID)
		}
		if _, dup := res[c.ID]; dup {
			return nil, fmt.Errorf("ingest: case id %s appears twice", c.ID)
		}
		if c.ID == "" || c.ID == "." || c.ID == ".." || strings.ContainsAny(c.ID, `/\`) {
			return nil, fmt.Errorf("ingest: case id %q cannot name a file", c.ID)
		}
		var p string
		var err error
		switch format {
		case task.LabelImage:
			p, err = conv.image(c)
		case task.LabelAnnotation:
			p, err = c.Label, conv.annotation(c.Label)
		case task.LabelPUMATissue:
			p, err = conv.tissue(c)
		case task.LabelPUMANuclei, task.LabelTopCoWROI, task.LabelTopCoWEdges, task.LabelDENTEX, task.LabelCSV:
			p, err = conv.json(c, format)
		case task.LabelDICOM:
			p, err = conv.dicomLabel(c)
		case task.LabelFolder:
			p, err = conv.folder(c)
		case task.LabelYOLO, task.LabelVOC:
			p, err = conv.boxes(c, format)
		default:
			err = fmt.Errorf("ingest: label format %q is not known", format)
		}
		if err != nil {
			return nil, err
		}
		res[c.ID] = p
	}
	if format == task.LabelCSV && t.Kind == taskspec.Classification {
		if err := conv.rowsWithoutImage(cases); err != nil {
			return nil, err
		}
	}
	return res, nil
}

type converter struct {
	t      *task.Task
	spec   *taskspec.Spec
	out    string
	tables map[string]any    // parsed table files by path
	sums   map[string][]byte // table files' bytes and hashes by path
	raws   map[string][]byte
}

// source reads a case's raw label and its hash; a table file is read once.
func (c *converter) source(path, format string) (raw, sum []byte, err error) {
	if task.Table(format) {
		if s, ok := c.sums[path]; ok {
			return c.raws[path], s, nil
		}
	}
	if raw, err = readSmall(path); err != nil {
		return nil, nil, err
	}
	h := sha256.Sum256(raw)
	if task.Table(format) {
		c.raws[path], c.sums[path] = raw, h[:]
	}
	return raw, h[:], nil
}

// bad is the error of an unusable label file: an ErrLabel that keeps err in its chain.
func bad(path string, err error) error {
	return fmt.Errorf("ingest: %s: %w: %w", path, ErrLabel, err)
}

// readSmall reads a raw label file of at most MaxFileBytes.
func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("ingest: %s: %w", path, err)
	}
	if len(b) > MaxFileBytes {
		return nil, bad(path, fmt.Errorf("larger than %d bytes", MaxFileBytes))
	}
	return b, nil
}

// key is the hash a converted file is made from: the converter version, the task's
// plugin-facing spec and label source, the case, and the given parts.
func (c *converter) key(id string, parts ...[]byte) string {
	h := sha256.New()
	spec, _ := json.Marshal(struct {
		S *taskspec.Spec
		L task.LabelSource
	}{c.spec, c.t.Data.Train.Label})
	for _, p := range append([][]byte{[]byte(version), spec, []byte(id)}, parts...) {
		fmt.Fprintf(h, "%d:", len(p))
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// cached reports whether out exists and was made from key.
func cached(out, key string) bool {
	b, err := os.ReadFile(out + ".source")
	if err != nil || strings.TrimSpace(string(b)) != key {
		return false
	}
	st, err := os.Stat(out)
	return err == nil && st.Mode().IsRegular()
}

// save writes a converted file with write, which must write atomically (fileio.Write,
// imageio.Write), then its source hash: a crash in between leaves a file without its
// hash, which is converted again.
func save(out, key string, write func(string) error) error {
	_ = os.Remove(out + ".source")
	if err := write(out); err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	if err := fileio.Write(out+".source", []byte(key+"\n")); err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	return nil
}

// annotation checks an annotation file against the task.
func (c *converter) annotation(path string) error {
	if _, err := taskspec.ReadAnnotation(path, c.spec); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("ingest: %w", err)
		}
		return fmt.Errorf("ingest: %w: %w", ErrLabel, err)
	}
	return nil
}

// json converts a case's label into an annotation file.
func (c *converter) json(cs task.Case, format string) (string, error) {
	raw, sum, err := c.source(cs.Label, format)
	if err != nil {
		return "", err
	}
	out := filepath.Join(c.out, cs.ID+".json")
	key := c.key(cs.ID, []byte(format), sum)
	if cached(out, key) {
		return out, nil
	}
	a, err := c.convert(cs, format, raw)
	if err != nil {
		return "", err
	}
	if err := a.Check(c.spec); err != nil {
		return "", bad(cs.Label, fmt.Errorf("case %s: %w", cs.ID, err))
	}
	b, err := a.Marshal()
	if err != nil {
		return "", fmt.Errorf("ingest: case %s: %w", cs.ID, err)
	}
	return out, save(out, key, func(p string) error { return fileio.Write(p, b) })
}

func (c *converter) convert(cs task.Case, format string, raw []byte) (*taskspec.Annotation, error) {
	switch format {
	case task.LabelPUMANuclei:
		pts, err := parseNuclei(raw, nucleiClasses(c.t.Points))
		if err != nil {
			return nil, bad(cs.Label, err)
		}
		return &taskspec.Annotation{Points: pts}, nil
	case task.LabelTopCoWROI:
		b, err := parseROI(raw)
		if err != nil {
			return nil, bad(cs.Label, err)
		}
		return &taskspec.Annotation{Box3D: b}, nil
	case task.LabelTopCoWEdges:
		m, err := parseEdges(raw, c.t.Attributes)
		if err != nil {
			return nil, bad(cs.Label, err)
		}
		return &taskspec.Annotation{Classes: m}, nil
	case task.LabelDENTEX:
		tab, ok := c.tables[cs.Label].(map[string]*taskspec.Annotation)
		if !ok {
			var err error
			if tab, err = parseCOCO(raw, c.t.Attributes); err != nil {
				return nil, bad(cs.Label, err)
			}
			c.tables[cs.Label] = tab
		}
		a := tab[cs.ID]
		if a == nil {
			return nil, bad(cs.Label, fmt.Errorf("no image has the file name of case %s", cs.ID))
		}
		return a, nil
	case task.LabelCSV:
		if c.t.Kind == taskspec.Classification {
			return c.classRowOf(cs)
		}
		tab, ok := c.tables[cs.Label].(*scoreTable)
		if !ok {
			var err error
			l := c.t.Data.Train.Label
			if tab, err = readScores(cs.Label, l.IDColumn, l.ValueColumn); err != nil {
				if errors.Is(err, os.ErrNotExist) {
					return nil, fmt.Errorf("ingest: %w", err)
				}
				return nil, bad(cs.Label, err)
			}
			c.tables[cs.Label] = tab
		}
		v, ok := tab.score(cs.ID)
		if !ok {
			return nil, bad(cs.Label, fmt.Errorf("case %s has no row", cs.ID))
		}
		return &taskspec.Annotation{Score: &v}, nil
	}
	return nil, fmt.Errorf("ingest: label format %q is not known", format)
}

// tissue rasterises a PUMA tissue GeoJSON on the case's image grid.
func (c *converter) tissue(cs task.Case) (string, error) {
	raw, sum, err := c.source(cs.Label, task.LabelPUMATissue)
	if err != nil {
		return "", err
	}
	if len(cs.Images) == 0 {
		return "", fmt.Errorf("ingest: case %s has no image to take the label's size from", cs.ID)
	}
	st, err := os.Stat(cs.Images[0])
	if err != nil {
		return "", fmt.Errorf("ingest: %w", err)
	}
	out := filepath.Join(c.out, cs.ID+".png")
	key := c.key(cs.ID, sum, []byte(fmt.Sprintf("%s %d %d", cs.Images[0], st.Size(), st.ModTime().UnixNano())))
	if cached(out, key) {
		return out, nil
	}
	allowed := map[int]bool{}
	for _, l := range c.t.Labels {
		allowed[l.Value] = true
	}
	polys, err := parseTissue(raw, allowed)
	if err != nil {
		return "", bad(cs.Label, err)
	}
	img, err := imageio.Read(cs.Images[0])
	if err != nil {
		return "", fmt.Errorf("ingest: case %s: %w", cs.ID, err)
	}
	if img.Dims[2] != 1 {
		return "", fmt.Errorf("ingest: case %s: image %s has %d slices; tissue labels are 2D", cs.ID, cs.Images[0], img.Dims[2])
	}
	l := rasterise(polys, img.Dims[0], img.Dims[1])
	v := &volume.Volume{Dims: [4]int{l.w, l.h, 1, 1}, Spacing: img.Spacing, Origin: img.Origin, Direction: img.Direction, Data: l.pix}
	return out, save(out, key, func(p string) error { return imageio.Write(p, v) })
}

// image checks a label image: it opens, has one channel, lies on the grid of the case's
// first image, and (for a segmentation of classes) holds only the task's label values.
func (c *converter) image(cs task.Case) (string, error) {
	v, err := imageio.Read(cs.Label)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("ingest: %w", err)
		}
		return "", bad(cs.Label, err)
	}
	if len(cs.Images) > 0 {
		g, err := gridOf(cs.Images[0])
		if err != nil {
			return "", fmt.Errorf("ingest: case %s: %w", cs.ID, err)
		}
		if d := [3]int{v.Dims[0], v.Dims[1], v.Dims[2]}; d != g {
			return "", fmt.Errorf("ingest: %w: case %s: the label %s is %s but the image %s is %s",
				ErrLabel, cs.ID, cs.Label, dimText(d), cs.Images[0], dimText(g))
		}
	}
	if c.t.Kind != taskspec.Segmentation {
		return cs.Label, nil
	}
	if v.Dims[3] != 1 {
		return "", bad(cs.Label, fmt.Errorf("%d channels; a label image has one", v.Dims[3]))
	}
	if c.t.Instances {
		return cs.Label, nil
	}
	if err := checkValues(v, c.t.Labels); err != nil {
		return "", bad(cs.Label, err)
	}
	return cs.Label, nil
}

func dimText(d [3]int) string {
	if d[2] == 1 {
		return fmt.Sprintf("%d×%d", d[0], d[1])
	}
	return fmt.Sprintf("%d×%d×%d", d[0], d[1], d[2])
}

// checkValues reports the first voxel value of v that is not one of labels.
func checkValues(v *volume.Volume, labels []taskspec.Label) error {
	allowed := make(map[int64]bool, len(labels))
	for _, l := range labels {
		allowed[int64(l.Value)] = true
	}
	if counts, ok := v.Labels(len(labels)); ok {
		for _, lc := range counts {
			if !allowed[lc.Value] {
				return fmt.Errorf("holds the value %d, which is not among the task's labels", lc.Value)
			}
		}
		return nil
	}
	for i, n := 0, v.Len(); i < n; i++ {
		f := v.AtIndex(i)
		if !allowed[int64(f)] || float64(int64(f)) != f {
			return fmt.Errorf("holds the value %g, which is not among the task's labels", f)
		}
	}
	return nil
}

// gridOf returns an image's X, Y, Z dims, from the header alone for NIfTI and MetaImage.
func gridOf(path string) ([3]int, error) {
	low := strings.ToLower(path)
	switch {
	case strings.HasSuffix(low, ".nii"), strings.HasSuffix(low, ".nii.gz"):
		h, err := nifti.ReadHeader(path)
		if err != nil {
			return [3]int{}, err
		}
		d := [3]int{1, 1, 1}
		for i := 0; i < 3 && int64(i) < h.Dim[0]; i++ {
			d[i] = int(h.Dim[i+1])
		}
		return d, nil
	case strings.HasSuffix(low, ".mha"), strings.HasSuffix(low, ".mhd"):
		h, err := metaimage.ReadHeader(path)
		if err != nil {
			return [3]int{}, err
		}
		d := [3]int{1, 1, 1}
		for i := 0; i < 3 && i < len(h.DimSize); i++ {
			d[i] = h.DimSize[i]
		}
		return d, nil
	}
	v, err := imageio.Read(path)
	if err != nil {
		return [3]int{}, err
	}
	return [3]int{v.Dims[0], v.Dims[1], v.Dims[2]}, nil
}
