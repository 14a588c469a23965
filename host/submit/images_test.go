package submit

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"amid/host/task"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// blob is a 3D label map of dims d: value v inside the box [lo, hi) per axis, 0 elsewhere.
func blob(d [3]int, lo, hi [3]int, v uint8) []uint8 {
	out := make([]uint8, d[0]*d[1]*d[2])
	for z := lo[2]; z < hi[2]; z++ {
		for y := lo[1]; y < hi[1]; y++ {
			for x := lo[0]; x < hi[0]; x++ {
				out[(z*d[1]+y)*d[0]+x] = v
			}
		}
	}
	return out
}

func asFloat32(d []uint8) []float32 {
	out := make([]float32, len(d))
	for i, v := range d {
		out[i] = float32(v)
	}
	return out
}

// TestVolumes submits 3D label maps that a plugin wrote as float32 NIfTI on a unit grid:
// each is rewritten in the submission's format on the input image's grid, as integers,
// and the challenge's grader scores the predictions equal to the answers as perfect.
func TestVolumes(t *testing.T) {
	// Input geometry of every case: anisotropic spacing, an offset origin and an LPS
	// direction with flipped x and y (NIfTI's RAS identity).
	in := grid{dims: [4]int{7, 6, 5, 1}, spacing: [3]float64{0.8, 0.8, 2.5}, origin: [3]float64{12, -30, 4},
		direction: [9]float64{-1, 0, 0, 0, -1, 0, 0, 0, 1}}
	d := [3]int{7, 6, 5}
	for _, c := range []struct {
		challenge, yaml, header, image, gt string
		labels                             []uint8 // values of the two boxes
		want                               map[string]float64
	}{
		{"isles22", `
id: isles22
kind: segmentation
dims: 3
labels: [{value: 0, name: background}, {value: 1, name: lesion}]
data:
  train: {images: ["train/{id}_dwi.nii.gz"], label: {path: "train/{id}_msk.nii.gz"}}
  test: {images: ["test/{id}_dwi.nii.gz"]}
metric: {name: dice}
submission: {columns: [case_id, predicted_mask_path], id_column: case_id, file_column: predicted_mask_path, path: "predictions/{id}_pred.nii.gz"}
`, "case_id,mask_path", "test/%s_dwi.nii.gz", "gt/%s_msk.nii.gz", []uint8{1, 1},
			map[string]float64{"dice": 1, "lesion_f1": 1, "lesion_count_diff": 0, "abs_volume_diff": 0}},
		{"panther-task1", `
id: panther-task1
kind: segmentation
dims: 3
labels: [{value: 0, name: background}, {value: 1, name: tumour}, {value: 2, name: pancreas}]
data:
  train: {images: ["ImagesTr/{id}_0000.mha"], label: {path: "LabelsTr/{id}.mha"}}
  test: {images: ["ImagesTs/{id}_0000.mha"]}
metric: {name: dsc}
submission: {columns: [image_id, predicted_mask_path], id_column: image_id, file_column: predicted_mask_path, path: "predictions/{id}.mha"}
`, "image_id,label_path", "test/%s_0000.mha", "gt/%s.mha", []uint8{1, 2},
			map[string]float64{"dsc": 1, "msd": 1, "hd95": 0, "masd": 0, "rmse": 0}},
		{"seg_a", `
id: seg_a
kind: segmentation
dims: 3
labels: [{value: 0, name: background}, {value: 1, name: aorta}]
data:
  train: {images: ["train/images/{id}.nrrd"], label: {path: "train/labels/{id}.seg.nrrd"}}
  test: {images: ["test/images/{id}.nrrd"]}
metric: {name: dsc_50pc}
submission: {columns: [image_id, predicted_mask_path], id_column: image_id, file_column: predicted_mask_path, path: "predictions/{id}.seg.nrrd"}
`, "image_id,label_path", "test/%s.nrrd", "gt/%s.seg.nrrd", []uint8{1, 1},
			map[string]float64{"dsc_50pc": 1, "hd_50pc": 0}},
	} {
		t.Run(c.challenge, func(t *testing.T) {
			tk := parseTask(t, c.yaml)
			root, ans := t.TempDir(), t.TempDir()
			var test []task.Case
			var preds []Prediction
			rows := map[string]string{}
			for i, id := range []string{"D1", "K13"} {
				img := filepath.Join(root, fmt.Sprintf(c.image, id))
				writeVol(t, img, in, make([]int16, 7*6*5))
				gt := blob(d, [3]int{1, 1, 1}, [3]int{4 + i, 4, 3}, c.labels[0])
				for j, v := range blob(d, [3]int{4 + i, 2, 2}, [3]int{7, 5, 4}, c.labels[1]) {
					gt[j] += v
				}
				rel := fmt.Sprintf(c.gt, id)
				writeVol(t, filepath.Join(ans, rel), in, gt)
				rows[id] = rel
				pred := filepath.Join(root, "plugin", id+".nii.gz")
				writeVol(t, pred, grid{dims: in.dims}, asFloat32(gt))
				test = append(test, task.Case{ID: id, Images: []string{img}})
				preds = append(preds, Prediction{CaseID: id, File: pred})
			}
			answersCSV(t, ans, c.header, rows)
			sub := filepath.Join(t.TempDir(), "sub")
			if err := Write(t.Context(), tk, test, preds, sub); err != nil {
				t.Fatal(err)
			}
			v, err := imageio.Read(filepath.Join(sub, task.Expand("", tk.Submission.Path, "D1")))
			if err != nil {
				t.Fatal(err)
			}
			if v.DType() != volume.Uint8 || !volume.SameGrid(v, &volume.Volume{Dims: in.dims, Spacing: in.spacing, Origin: in.origin, Direction: in.direction}, 1e-6) { // NIfTI stores spacing as float32
				t.Errorf("written %v on spacing %v origin %v direction %v, want uint8 on the input's grid", v.DType(), v.Spacing, v.Origin, v.Direction)
			}
			gradePerfect(t, c.challenge, tk, test, preds, ans, c.want)
		})
	}
}

// TestPlanes submits 2D predictions: instance masks (NeurIPS-CellSeg) written by the plugin
// as 16-bit TIFF, and enhanced ultrasound (USenhance) written as float32 TIFF, which the
// PNG submission stores as 8-bit.
func TestPlanes(t *testing.T) {
	const w, h = 24, 20
	t.Run("neurips-cellseg", func(t *testing.T) {
		tk := parseTask(t, `
id: neurips-cellseg
kind: segmentation
dims: 2
instances: true
data:
  train: {images: ["train/images/{id}.png"], label: {path: "train/labels/{id}_label.tiff"}}
  test: {images: ["test/images/{id}.png"]}
metric: {name: f1_0.5}
submission: {columns: [image_id, predicted_mask_path], id_column: image_id, file_column: predicted_mask_path, path: "predictions/{id}_label.tiff"}
`)
		root, ans := t.TempDir(), t.TempDir()
		var test []task.Case
		var preds []Prediction
		rows := map[string]string{}
		for i, id := range []string{"cell_00001", "tuning_cell_00001"} {
			img := filepath.Join(root, "test/images", id+".png")
			writeVol(t, img, grid{dims: [4]int{w, h, 1, 3}}, make([]uint8, w*h*3))
			gt := make([]uint16, w*h)
			// two cells well inside the 2-pixel border the metric removes
			for y := 4; y < 9; y++ {
				for x := 4 + i; x < 10; x++ {
					gt[y*w+x] = 1
				}
				for x := 13; x < 19; x++ {
					gt[(y+6)*w+x] = 300
				}
			}
			writeVol(t, filepath.Join(ans, "labels", id+"_label.tiff"), grid{dims: [4]int{w, h, 1, 1}}, gt)
			rows[id] = "labels/" + id + "_label.tiff"
			pred := filepath.Join(root, "plugin", id+".tif")
			writeVol(t, pred, grid{dims: [4]int{w, h, 1, 1}}, gt)
			test = append(test, task.Case{ID: id, Images: []string{img}})
			preds = append(preds, Prediction{CaseID: id, File: pred})
		}
		answersCSV(t, ans, "image_id,label_path", rows)
		gradePerfect(t, "neurips-cellseg", tk, test, preds, ans, map[string]float64{"f1_0.5": 1, "f1_0.9": 1})
	})
	t.Run("usenhance", func(t *testing.T) {
		tk := parseTask(t, `
id: usenhance
kind: enhancement
dims: 2
data:
  train: {images: ["train/low_quality/{id}.png"], label: {path: "train/high_quality/{id}.png"}}
  test: {images: ["test/low_quality/{id}.png"]}
metric: {name: lncc}
submission: {columns: [image_id, enhanced_image_path], id_column: image_id, file_column: enhanced_image_path, path: "enhanced/{id}.png"}
`)
		root, ans := t.TempDir(), t.TempDir()
		var test []task.Case
		var preds []Prediction
		rows := map[string]string{}
		for i, id := range []string{"breast_1", "thyroid_2"} {
			img := filepath.Join(root, "test/low_quality", id+".png")
			writeVol(t, img, grid{dims: [4]int{w, h, 1, 1}}, make([]uint8, w*h))
			gt := make([]uint8, w*h)
			for j := range gt {
				gt[j] = uint8((j*37 + i*11) % 251) // a deterministic texture
			}
			writeVol(t, filepath.Join(ans, "gt", id+".png"), grid{dims: [4]int{w, h, 1, 1}}, gt)
			rows[id] = "gt/" + id + ".png"
			pred := filepath.Join(root, "plugin", id+".tif")
			f := asFloat32(gt)
			f[0] += 0.3 // rounds back to the answer
			writeVol(t, pred, grid{dims: [4]int{w, h, 1, 1}}, f)
			test = append(test, task.Case{ID: id, Images: []string{img}})
			preds = append(preds, Prediction{CaseID: id, File: pred})
		}
		answersCSV(t, ans, "image_id,ground_truth_path", rows)
		gradePerfect(t, "usenhance", tk, test, preds, ans, map[string]float64{"lncc": 1, "ssim": 1, "psnr": math.Inf(1)})
	})
}
