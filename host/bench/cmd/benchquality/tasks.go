package main

import (
	"fmt"
	"os"
	"path/filepath"

	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// The real scan and its label maps: the T1 brain MR of the ITK examples (Debian
// insighttoolkit5-examples, Apache-2.0), 128 × 128 × 62 at 2 × 2 × 3 mm, with a tissue
// segmentation (KmeansPrelimSegmentation: 7 values) and a brain mask (RawSkullStrip)
// made by ITK's algorithms from that scan.
const (
	itkData   = "root/usr/share/doc/insighttoolkit5-examples/examples/Data"
	t1Image   = "KmeansTest_T1UCharRaw.nii.gz"
	t1Tissues = "KmeansTest_T1KmeansPrelimSegmentation.nii.gz"
	t1Brain   = "KmeansTest_T1RawSkullStrip.nii.gz"
)

// slabs splits the scan along its slice axis into nine slabs of seven slices (the last
// six); slabs 1, 4 and 7 are the test cases, the other six train: the split the issue's
// report used. Each slab keeps its place in the patient frame (its origin).
const slabSlices = 7

var testSlabs = map[int]bool{1: true, 4: true, 7: true}

// taskDef is one benchmark task.
type taskDef struct {
	ID, Title string
	Labels    []string // names of the label values 0, 1, …
	// label maps a voxel of the source label map to the task's label value.
	label  func(v float64) uint8
	source string
}

var tasks = []taskDef{
	{ID: "t1-tissue", Title: "T1 brain MR tissue classes (ITK k-means segmentation)", source: t1Tissues,
		// Values 0 (126 voxels) and 1 (the darkest cluster: air and background) are the
		// background; the five tissue clusters 2–6 are classes 1–5.
		Labels: []string{"background", "tissue 2", "tissue 3", "tissue 4", "tissue 5", "tissue 6"},
		label: func(v float64) uint8 {
			if v <= 1 {
				return 0
			}
			return uint8(v - 1)
		}},
	{ID: "t1-brain", Title: "T1 brain MR brain mask (ITK skull strip)", source: t1Brain,
		Labels: []string{"background", "brain"},
		label: func(v float64) uint8 {
			if v > 0 {
				return 1
			}
			return 0
		}},
}

// writeTask writes task t as a task.yaml folder under dir: train/ and test/ slabs,
// answers/ with the test labels; it returns the case ids of train and test in slice
// order with the first slice of each.
func writeTask(realdata, dir string, t taskDef) (train, test []slab, err error) {
	img, err := imageio.Read(filepath.Join(realdata, itkData, t1Image))
	if err != nil {
		return nil, nil, err
	}
	src, err := imageio.Read(filepath.Join(realdata, itkData, t.source))
	if err != nil {
		return nil, nil, err
	}
	if img.Dims != src.Dims {
		return nil, nil, fmt.Errorf("%s is %v, its label map %v", t1Image, img.Dims, src.Dims)
	}
	for _, sub := range []string{"train", "test", "answers"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, nil, err
		}
	}
	X, Y, Z := img.Dims[0], img.Dims[1], img.Dims[2]
	for k, z0 := 0, 0; z0 < Z; k, z0 = k+1, z0+slabSlices {
		n := min(slabSlices, Z-z0)
		iv, err := volume.New(volume.Float32, [4]int{X, Y, n, 1})
		if err != nil {
			return nil, nil, err
		}
		lv, err := volume.New(volume.Uint8, [4]int{X, Y, n, 1})
		if err != nil {
			return nil, nil, err
		}
		for _, v := range []*volume.Volume{iv, lv} {
			v.Spacing, v.Direction = img.Spacing, img.Direction
			v.Origin = img.VoxelToWorld([3]float64{0, 0, float64(z0)})
		}
		for i := range X * Y * n {
			iv.SetIndex(i, img.AtIndex(z0*X*Y+i))
			lv.SetIndex(i, float64(t.label(src.AtIndex(z0*X*Y+i))))
		}
		id := fmt.Sprintf("slab%d", k)
		s := slab{ID: id, Z0: z0, N: n}
		if testSlabs[k] {
			if err := imageio.Write(filepath.Join(dir, "test", id+"_t1.nii.gz"), iv); err != nil {
				return nil, nil, err
			}
			if err := imageio.Write(filepath.Join(dir, "answers", id+"_seg.nii.gz"), lv); err != nil {
				return nil, nil, err
			}
			test = append(test, s)
			continue
		}
		if err := imageio.Write(filepath.Join(dir, "train", id+"_t1.nii.gz"), iv); err != nil {
			return nil, nil, err
		}
		if err := imageio.Write(filepath.Join(dir, "train", id+"_seg.nii.gz"), lv); err != nil {
			return nil, nil, err
		}
		train = append(train, s)
	}
	yaml := fmt.Sprintf(`# make bench-quality: %s, cut into slabs of %d slices.
id: %s
title: %s
kind: segmentation
dims: 3
modality: MR
channels: [t1]
labels:
`, t.Title, slabSlices, t.ID, t.Title)
	for v, name := range t.Labels {
		yaml += fmt.Sprintf("  - {value: %d, name: %s}\n", v, name)
	}
	yaml += `data:
  train:
    images: ["train/{id}_t1.nii.gz"]
    label: {path: "train/{id}_seg.nii.gz"}
  test:
    images: ["test/{id}_t1.nii.gz"]
metric: {name: dice, direction: max}
submission:
  columns: [case_id, predicted_mask_path]
  id_column: case_id
  file_column: predicted_mask_path
  path: "predictions/{id}_seg.nii.gz"
`
	return train, test, os.WriteFile(filepath.Join(dir, "task.yaml"), []byte(yaml), 0o644)
}

// slab is one case: its first slice in the scan and its number of slices.
type slab struct {
	ID    string
	Z0, N int
}
