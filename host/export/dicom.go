package export

import (
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"strings"

	"amid/host/task"
	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/seg"
	"amid/viewer/dicom/source"
	"amid/viewer/dicom/sr"
	"amid/viewer/imageio"
	"amid/viewer/volume"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// maxSEG bounds a DICOM object or prediction Verify reads.
const maxSEG = 1 << 30

// checkDICOM checks the DICOM objects under dicom/ against the predictions: each SEG
// (dicom/ID.dcm) reads back to its prediction's label map, each structured report reads
// as one, and each derived series (dicom/ID/, a file a slice) reads back to its predicted
// image within its 16-bit storage's rounding (amid/viewer/dicom/derived).
func (v *Verification) checkDICOM(fsys fs.FS, listed map[string]File) {
	var singles []string
	series := map[string][]string{}
	for _, p := range sortedKeys(listed) {
		rest, ok := strings.CutPrefix(p, DirDICOM+"/")
		if !ok {
			continue
		}
		if id, _, ok := strings.Cut(rest, "/"); ok {
			series[id] = append(series[id], p)
		} else {
			singles = append(singles, p)
		}
	}
	if len(singles) == 0 && len(series) == 0 {
		return
	}
	raw, err := readLimited(fsys, FileTask, 1<<20)
	if err != nil {
		v.fail("task.yaml cannot be read to check the DICOM objects: %v", err)
		return
	}
	t, err := task.Parse(raw)
	if err != nil {
		v.fail("task.yaml: %v", err)
		return
	}
	values := map[string]int{}
	for _, l := range t.Labels {
		values[l.Name] = l.Value
	}
	tmp, err := os.MkdirTemp("", "amid-verify-dicom-")
	if err != nil {
		v.fail("%v", err)
		return
	}
	defer os.RemoveAll(tmp)
	for _, p := range singles {
		id := strings.TrimSuffix(path.Base(p), ".dcm")
		pred := predictionOf(listed, id)
		if pred == "" {
			v.fail("%s has no prediction %s/%s.*", p, DirPredictions, id)
			continue
		}
		b, err := readLimited(fsys, p, maxSEG)
		if err == nil {
			var f *dataset.File
			if f, err = dataset.Parse(b, dataset.Options{}); err == nil {
				switch class := f.DataSet.String(tag.SOPClassUID); {
				case class == source.SegmentationStorage:
					if err = segMatches(fsys, f, pred, values, tmp); err == nil {
						v.SEGs++
					}
				case strings.HasPrefix(class, srClasses):
					if _, err = sr.FromDataSet(f); err == nil {
						v.SRs++
					}
				default:
					err = fmt.Errorf("neither a DICOM SEG nor a structured report (SOP class %s)", class)
				}
			}
		}
		if err != nil {
			v.fail("%s: %v", p, err)
		}
	}
	for _, id := range sortedKeys(series) {
		pred := predictionOf(listed, id)
		if pred == "" {
			v.fail("%s/%s/ has no prediction %s/%s.*", DirDICOM, id, DirPredictions, id)
			continue
		}
		if err := derivedMatches(fsys, series[id], pred, filepath.Join(tmp, "series", id)); err != nil {
			v.fail("%s/%s/: %v", DirDICOM, id, err)
			continue
		}
		v.Derived++
	}
}

// srClasses is the prefix of the structured reports' SOP Class UIDs (PS3.4 B.5).
const srClasses = "1.2.840.10008.5.1.4.1.1.88."

// predictionOf is the listed prediction of case id (predictions/ID.*), "" when none.
func predictionOf(listed map[string]File, id string) string {
	for _, q := range sortedKeys(listed) {
		if strings.HasPrefix(q, DirPredictions+"/") && strings.HasPrefix(path.Base(q), id+".") {
			return q
		}
	}
	return ""
}

// readPrediction reads the image of prediction pred, copied out of fsys into tmp.
func readPrediction(fsys fs.FS, pred, tmp string) (*volume.Volume, error) {
	pb, err := readLimited(fsys, pred, maxSEG)
	if err != nil {
		return nil, err
	}
	local := filepath.Join(tmp, path.Base(pred))
	if err := os.WriteFile(local, pb, 0o600); err != nil {
		return nil, err
	}
	img, err := imageio.Read(local)
	if err != nil {
		return nil, fmt.Errorf("its prediction %s: %w", pred, err)
	}
	return img, nil
}

// derivedMatches reads the derived series whose files are files (copied into the folder
// dir) and compares its values with the predicted image pred: equal within the range of
// the prediction over 65535, the 16-bit storage's step where its values are not integers
// (amid/viewer/dicom/derived; exact where they are).
func derivedMatches(fsys fs.FS, files []string, pred, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, p := range files {
		b, err := readLimited(fsys, p, maxSEG)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, path.Base(p)), b, 0o600); err != nil {
			return err
		}
	}
	back, _, err := source.Image(dir)
	if err != nil {
		return err
	}
	img, err := readPrediction(fsys, pred, filepath.Dir(dir))
	if err != nil {
		return err
	}
	if back.Dims != img.Dims {
		return fmt.Errorf("a series of %v voxels, its prediction %s %v", back.Dims, pred, img.Dims)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range img.NumVoxels() {
		lo, hi = min(lo, float64(img.AtIndex(i))), max(hi, float64(img.AtIndex(i)))
	}
	tol := (hi - lo) / 65535
	differ := 0
	for i := range img.NumVoxels() {
		if math.Abs(float64(back.AtIndex(i))-float64(img.AtIndex(i))) > tol {
			differ++
		}
	}
	if differ > 0 {
		return fmt.Errorf("it reads back to an image that differs from %s by more than %.3g in %d voxels", pred, tol, differ)
	}
	return nil
}

// segMatches reads the SEG f and the prediction pred and compares their label maps.
func segMatches(fsys fs.FS, f *dataset.File, pred string, values map[string]int, tmp string) error {
	s, err := seg.FromDataSet(f)
	if err != nil {
		return err
	}
	lab, err := readPrediction(fsys, pred, tmp)
	if err != nil {
		return err
	}
	m := map[int]int{}
	for _, sg := range s.Segments {
		val, ok := values[sg.Label]
		if !ok {
			return fmt.Errorf("segment %d %q is none of the task's labels", sg.Number, sg.Label)
		}
		m[sg.Number] = val
	}
	back, err := s.LabelMap(lab, nil, m)
	if err != nil {
		return fmt.Errorf("placed on its prediction %s: %w", pred, err)
	}
	differ := 0
	for i := range lab.NumVoxels() {
		if back.AtIndex(i) != lab.AtIndex(i) {
			differ++
		}
	}
	if differ > 0 {
		return fmt.Errorf("it reads back to a label map that differs from %s in %d voxels", pred, differ)
	}
	return nil
}
