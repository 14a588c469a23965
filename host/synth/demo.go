package synth

import (
	"fmt"
	"os"
	"path/filepath"

	"amid/viewer/nifti"
)

// DemoTask is the bundled demo task's definition: head CT tissue segmentation on HeadCT
// volumes (six labels, haemorrhage included), written beside its data by Demo.
const DemoTask = `# AMID's demo task: head CT tissue segmentation on generated head CTs (amid/host/synth).
id: demo-headct
title: Head CT tissue segmentation (generated demo)
description: >-
  Segment soft tissue, skull, brain, ventricles and a haemorrhage on small head CT volumes
  in Hounsfield units. The data are generated, so nothing here is a patient.
kind: segmentation
dims: 3
modality: CT
channels: [ct]
labels:
  - {value: 0, name: background}
  - {value: 1, name: soft tissue}
  - {value: 2, name: bone}
  - {value: 3, name: brain}
  - {value: 4, name: ventricle}
  - {value: 5, name: haemorrhage}
data:
  train:
    images: ["train/{id}_ct.nii.gz"]
    label: {path: "train/{id}_seg.nii.gz"}
  test:
    images: ["test/{id}_ct.nii.gz"]
metric: {name: dice, direction: max}
submission:
  columns: [case_id, predicted_mask_path]
  id_column: case_id
  file_column: predicted_mask_path
  path: "predictions/{id}_seg.nii.gz"
budget: 3m
`

// Demo grid: a 230 × 230 × 160 mm field of view on 48 × 48 × 20 voxels of 4.8 × 4.8 × 8 mm,
// small enough to train on two cores in a few minutes.
var (
	DemoDims    = [3]int{48, 48, 20}
	DemoSpacing = [3]float64{4.8, 4.8, 8}
)

// Demo writes the demo task into dir: task.yaml, train/ with n cases and test/ with
// max(n/4, 1) cases (seeds from seed on), and answers/ with the test labels.
func Demo(dir string, n int, seed uint64) error {
	if n < 2 {
		return fmt.Errorf("demo: %d training cases; at least 2 are needed", n)
	}
	for _, d := range []string{"train", "test", "answers"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "task.yaml"), []byte(DemoTask), 0o644); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	test := max(n/4, 1)
	for i := range n + test {
		ct, lab, err := HeadCT(seed+uint64(i), DemoDims, DemoSpacing)
		if err != nil {
			return err
		}
		split, id := "train", fmt.Sprintf("head%03d", i+1)
		labDir := "train"
		if i >= n {
			split, labDir = "test", "answers"
		}
		if err := nifti.Write(filepath.Join(dir, split, id+"_ct.nii.gz"), ct); err != nil {
			return err
		}
		if err := nifti.Write(filepath.Join(dir, labDir, id+"_seg.nii.gz"), lab); err != nil {
			return err
		}
	}
	return nil
}
