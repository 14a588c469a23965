package ingest

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"amid/host/task"
	"amid/plugins/taskspec"
	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/rtstruct"
	"amid/viewer/dicom/seg"
	"amid/viewer/dicom/source"
	"amid/viewer/imageio"
	"amid/viewer/volume"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// dicomLabel turns a case's DICOM SEG or RTSTRUCT into a label map on the grid of the
// case's first image (a DICOM series): <id>.nii.gz.
func (c *converter) dicomLabel(cs task.Case) (string, error) {
	raw, sum, err := c.source(cs.Label, task.LabelDICOM)
	if err != nil {
		return "", err
	}
	if len(cs.Images) == 0 {
		return "", fmt.Errorf("ingest: case %s has no image to place its DICOM label on", cs.ID)
	}
	stamp, err := treeStamp(cs.Images[0])
	if err != nil {
		return "", fmt.Errorf("ingest: %w", err)
	}
	out := filepath.Join(c.out, cs.ID+".nii.gz")
	key := c.key(cs.ID, sum, stamp)
	if cached(out, key) {
		return out, nil
	}
	f, err := dataset.Parse(raw, dataset.Options{})
	if err != nil {
		return "", bad(cs.Label, err)
	}
	grid, src, err := source.Image(cs.Images[0])
	if err != nil {
		return "", fmt.Errorf("ingest: case %s: the image a DICOM label lies on must be DICOM: %w", cs.ID, err)
	}
	var lab *volume.Volume
	switch {
	case seg.IsSegmentation(f):
		lab, err = c.fromSEG(f, grid, src)
	case rtstruct.IsStructureSet(f):
		lab, err = c.fromRTSTRUCT(f, grid, src)
	default:
		err = fmt.Errorf("it is neither a DICOM SEG nor an RTSTRUCT (SOP Class %q)", f.DataSet.String(tag.SOPClassUID))
	}
	if err != nil {
		return "", bad(cs.Label, fmt.Errorf("case %s: %w", cs.ID, err))
	}
	return out, save(out, key, func(p string) error { return imageio.Write(p, lab) })
}

// fromSEG places a segmentation's mapped segments on the image grid.
func (c *converter) fromSEG(f *dataset.File, grid *volume.Volume, src *source.Series) (*volume.Volume, error) {
	s, err := seg.FromDataSet(f)
	if err != nil {
		return nil, err
	}
	if err := sameFrame(s.FrameOfReferenceUID, src); err != nil {
		return nil, err
	}
	if s.ReferencedSeriesUID != "" && src.SeriesInstanceUID != "" && s.ReferencedSeriesUID != src.SeriesInstanceUID {
		return nil, fmt.Errorf("the segmentation was drawn on series %s, the case's image is series %s", s.ReferencedSeriesUID, src.SeriesInstanceUID)
	}
	items := make([]labelled, len(s.Segments))
	for i, sg := range s.Segments {
		items[i] = labelled{number: sg.Number, name: sg.Label, code: sg.Type, what: "segment"}
	}
	m, err := matchLabels(items, c.t)
	if err != nil {
		return nil, err
	}
	return s.LabelMap(grid, src, m)
}

// fromRTSTRUCT rasterises a structure set's mapped ROIs on the image grid.
func (c *converter) fromRTSTRUCT(f *dataset.File, grid *volume.Volume, src *source.Series) (*volume.Volume, error) {
	s, err := rtstruct.FromDataSet(f)
	if err != nil {
		return nil, err
	}
	if err := sameFrame(s.FrameOfReferenceUID, src); err != nil {
		return nil, err
	}
	items := make([]labelled, len(s.ROIs))
	for i, r := range s.ROIs {
		items[i] = labelled{number: r.Number, name: r.Name, what: "ROI"}
	}
	m, err := matchLabels(items, c.t)
	if err != nil {
		return nil, err
	}
	lab, _, err := s.Rasterise(grid, src, m)
	return lab, err
}

func sameFrame(frame string, src *source.Series) error {
	if frame != "" && src.FrameOfReferenceUID != "" && frame != src.FrameOfReferenceUID {
		return fmt.Errorf("it lies in frame of reference %s, the case's image in %s", frame, src.FrameOfReferenceUID)
	}
	return nil
}

// labelled is a segment or ROI to match with the task's labels.
type labelled struct {
	number int
	name   string
	code   seg.Code // segments only
	what   string   // "segment" or "ROI"
}

// matchLabels maps each segment or ROI to a label value of the task: through the task's
// names mapping (by name, code meaning or SCHEME:VALUE code), else by code, else by name
// (ignoring case, spaces, '-' and '_'). One that matches nothing is an error that names
// it and the labels; one mapped to the background (value 0) is left out.
func matchLabels(items []labelled, t *task.Task) (map[int]int, error) {
	names := map[string]string{}
	for k, v := range t.Data.Train.Label.Names {
		names[fold(k)] = v
	}
	byName := map[string]taskspec.Label{}
	for _, l := range t.Labels {
		byName[fold(l.Name)] = l
	}
	out := map[int]int{}
	for _, it := range items {
		keys := []string{it.name}
		if !it.code.IsZero() {
			keys = append(keys, it.code.Scheme+":"+it.code.Value, it.code.Meaning)
		}
		l, ok := taskspec.Label{}, false
		for _, k := range keys {
			if target, found := names[fold(k)]; found && k != "" {
				l, ok = byName[fold(target)]
				break
			}
		}
		if !ok && !it.code.IsZero() {
			for _, x := range t.Labels {
				if !x.Code.IsZero() && strings.EqualFold(x.Code.Scheme, it.code.Scheme) && x.Code.Value == it.code.Value {
					l, ok = x, true
					break
				}
			}
		}
		for _, k := range keys {
			if ok || k == "" {
				break
			}
			l, ok = byName[fold(k)]
		}
		if !ok {
			desc := fmt.Sprintf("%s %d %q", it.what, it.number, it.name)
			if !it.code.IsZero() {
				desc += " (" + it.code.String() + ")"
			}
			return nil, fmt.Errorf("%s matches none of the task's labels (%s); map it in data.train.label.names", desc, labelNames(t.Labels))
		}
		if l.Value != 0 {
			out[it.number] = l.Value
		}
	}
	return out, nil
}

// fold normalises a name for matching: lower case, without spaces, '-' and '_'.
func fold(s string) string {
	return strings.NewReplacer(" ", "", "-", "", "_", "").Replace(strings.ToLower(strings.TrimSpace(s)))
}

func labelNames(ls []taskspec.Label) string {
	n := make([]string, len(ls))
	for i, l := range ls {
		n[i] = l.Name
	}
	return strings.Join(n, ", ")
}

// treeStamp identifies the files of an image (a file, or the files of a folder): their
// names, sizes and modification times, hashed.
func treeStamp(path string) ([]byte, error) {
	h := sha256.New()
	var lines []string
	err := filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		lines = append(lines, fmt.Sprintf("%s %d %d", p, info.Size(), info.ModTime().UnixNano()))
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Fprintln(h, l)
	}
	return h.Sum(nil), nil
}
