package predict

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strconv"

	"amid/host/task"
	"amid/plugins/taskspec"
	"amid/viewer/imageio"
)

// VolumeRow is one label's extent in one case's predicted label map, as TotalSegmentator's
// --statistics reports it: voxels, and millilitres (a volume) or square millimetres (a 2D
// task's image).
type VolumeRow struct {
	Case   string
	Label  taskspec.Label
	Voxels int64
	// Size is mL for a 3D task, mm² for a 2D one.
	Size float64
}

// Volumes measures each of the task's labels but background in the label map pred of case
// id, a row per label (none for a task whose labels are instances or that is no
// segmentation). A value the task does not name is an error.
func Volumes(t *task.Task, id, pred string) ([]VolumeRow, error) {
	if t.Kind != taskspec.Segmentation || t.Instances {
		return nil, nil
	}
	v, err := imageio.Read(pred)
	if err != nil {
		return nil, err
	}
	index := map[int]int{}
	for i, l := range t.Labels {
		index[l.Value] = i
	}
	counts := make([]int64, len(t.Labels))
	for i := range v.NumVoxels() {
		x := v.AtIndex(i * v.Dims[3])
		k, ok := index[int(x)]
		if !ok || float64(int(x)) != x {
			return nil, fmt.Errorf("prediction %s holds the value %g, which is no label of the task", pred, x)
		}
		counts[k]++
	}
	unit := v.Spacing[0] * v.Spacing[1] // mm²
	if t.Dims == 3 {
		unit *= v.Spacing[2] / 1000 // mm³ → mL
	}
	var rows []VolumeRow
	for i, l := range t.Labels {
		if l.Value == 0 {
			continue
		}
		rows = append(rows, VolumeRow{Case: id, Label: l, Voxels: counts[i], Size: float64(counts[i]) * unit})
	}
	return rows, nil
}

// VolumesCSV writes rows as CSV: case_id, label, name, voxels, and volume_ml (3D) or
// area_mm2 (2D).
func VolumesCSV(t *task.Task, rows []VolumeRow) []byte {
	unit := "volume_ml"
	if t.Dims == 2 {
		unit = "area_mm2"
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write([]string{"case_id", "label", "name", "voxels", unit})
	for _, r := range rows {
		w.Write([]string{r.Case, strconv.Itoa(r.Label.Value), r.Label.Name, strconv.FormatInt(r.Voxels, 10), strconv.FormatFloat(r.Size, 'f', 3, 64)})
	}
	w.Flush()
	return b.Bytes()
}
