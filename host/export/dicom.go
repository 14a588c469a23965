package export

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"amid/host/task"
	"amid/viewer/dicom/seg"
	"amid/viewer/imageio"
)

// maxSEG bounds a DICOM SEG object Verify reads.
const maxSEG = 1 << 30

// checkDICOM checks that every DICOM SEG under dicom/ reads back to its prediction.
func (v *Verification) checkDICOM(fsys fs.FS, listed map[string]File) {
	var segs []string
	for _, p := range sortedKeys(listed) {
		if strings.HasPrefix(p, DirDICOM+"/") {
			segs = append(segs, p)
		}
	}
	if len(segs) == 0 {
		return
	}
	raw, err := readLimited(fsys, FileTask, 1<<20)
	if err != nil {
		v.fail("task.yaml cannot be read to check the DICOM SEG objects: %v", err)
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
	tmp, err := os.MkdirTemp("", "amid-verify-seg-")
	if err != nil {
		v.fail("%v", err)
		return
	}
	defer os.RemoveAll(tmp)
	for _, p := range segs {
		id := strings.TrimSuffix(path.Base(p), ".dcm")
		pred := ""
		for _, q := range sortedKeys(listed) {
			if strings.HasPrefix(q, DirPredictions+"/") && strings.HasPrefix(path.Base(q), id+".") {
				pred = q
				break
			}
		}
		if pred == "" {
			v.fail("%s has no prediction %s/%s.*", p, DirPredictions, id)
			continue
		}
		if err := v.segMatches(fsys, p, pred, values, tmp); err != nil {
			v.fail("%s: %v", p, err)
			continue
		}
		v.SEGs++
	}
}

// segMatches reads the SEG at p and the prediction pred and compares their label maps.
func (v *Verification) segMatches(fsys fs.FS, p, pred string, values map[string]int, tmp string) error {
	b, err := readLimited(fsys, p, maxSEG)
	if err != nil {
		return err
	}
	s, err := seg.Decode(b)
	if err != nil {
		return err
	}
	pb, err := readLimited(fsys, pred, maxSEG)
	if err != nil {
		return err
	}
	local := filepath.Join(tmp, path.Base(pred))
	if err := os.WriteFile(local, pb, 0o600); err != nil {
		return err
	}
	lab, err := imageio.Read(local)
	if err != nil {
		return fmt.Errorf("its prediction %s: %w", pred, err)
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
