// Package metricstest holds the small cases that every caller of amid/plugins/metrics (the
// graders, the host's validation, the plugins' validation, the Review screen) scores in its
// cross-caller test, with the number each grader's rule gives, worked out by hand. Each
// caller's test checks that it gets that number: so all of them compute one definition.
package metricstest

import (
	"fmt"
	"os"
	"path/filepath"

	"amid/plugins/metrics"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// LabelCase is a pair of label maps on a Dims grid (X fastest), 1 mm voxels.
type LabelCase struct {
	ID          string
	Dims        [3]int
	Truth, Pred []uint8
}

// Labels are the task's label values of LabelCases, background 0 first.
var Labels = []int{0, 1, 2, 3}

// labelDims is the grid of every LabelCase: 16 voxels.
var labelDims = [3]int{4, 2, 2}

func paint(voxels map[int]uint8) []uint8 {
	out := make([]uint8, labelDims[0]*labelDims[1]*labelDims[2])
	for i, v := range voxels {
		out[i] = v
	}
	return out
}

// LabelCases are three cases of the task's labels 1, 2 and 3:
//
//   - "absent": label 1 has 4 voxels in each map, 2 shared (Dice 4/8); label 2 has 2 voxels
//     in the truth and none in the prediction (Dice 0); label 3 is absent from both.
//   - "extra": label 1 is found exactly (Dice 1); label 3 has 2 voxels in the prediction
//     only (Dice 0).
//   - "empty": both maps hold background only.
func LabelCases() []LabelCase {
	return []LabelCase{
		{"absent", labelDims,
			paint(map[int]uint8{0: 1, 1: 1, 2: 1, 3: 1, 4: 2, 5: 2}),
			paint(map[int]uint8{0: 1, 1: 1, 8: 1, 9: 1})},
		{"extra", labelDims,
			paint(map[int]uint8{0: 1, 1: 1, 2: 1, 3: 1}),
			paint(map[int]uint8{0: 1, 1: 1, 2: 1, 3: 1, 12: 3, 13: 3})},
		{"empty", labelDims, paint(nil), paint(nil)},
	}
}

// DiceChallenges are the challenge ids whose Dice rules WantDice knows: a task of the
// user's own ("") and one grader of each rule.
var DiceChallenges = []string{"", "topcow-track1-task1", "topbrain-track1"}

// WantDice is the mean over LabelCases of each case's Dice under the rule of challenge's
// grader.
func WantDice(challenge string) float64 {
	switch challenge {
	case "":
		// Labels of the truth or the prediction; a case with none scores 1:
		// absent (1/2 + 0)/2, extra (1 + 0)/2, empty 1.
		return (0.25 + 0.5 + 1) / 3
	case "topcow-track1-task1":
		// The truth's labels only, 2I/(G+P+1e-7) (the ReX-MLE TopCoW grader); a truth with
		// none scores 1: absent (4/(8+ε) + 0)/2, extra 8/(8+ε) (label 3 ignored), empty 1.
		const eps = 1e-7
		return ((4/(8+eps)+0)/2 + 8/(8+eps) + 1) / 3
	case "topbrain-track1":
		// As for a task of one's own, but a case with no label scores 0 (the ReX-MLE
		// TopBrain grader): absent 1/4, extra 1/2, empty 0.
		return (0.25 + 0.5 + 0) / 3
	}
	panic(fmt.Sprintf("metricstest: no Dice worked out for challenge %q", challenge))
}

// InstanceCase is a pair of w×h instance maps (row-major, 0 background).
type InstanceCase struct {
	ID          string
	W, H        int
	Truth, Pred []int32
}

// instanceSide is the side of every InstanceCase: cells at 3..9 keep off the 2-pixel
// border that the NeurIPS-CellSeg grader strips.
const instanceSide = 12

func cells(squares map[int32][2]int) []int32 {
	out := make([]int32, instanceSide*instanceSide)
	for id, at := range squares {
		for y := at[1]; y < at[1]+3; y++ {
			for x := at[0]; x < at[0]+3; x++ {
				out[y*instanceSide+x] = id
			}
		}
	}
	return out
}

// InstanceCases are two images of 3×3 cells:
//
//   - "cells": the truth has cells at (3, 3) and (7, 7); the prediction finds the first
//     exactly, misses the second and adds one at (7, 3): TP 1, precision and recall 1/2,
//     F1 1/2.
//   - "empty": no cell on either side: F1 0 (the grader scores 0 whenever TP is 0).
func InstanceCases() []InstanceCase {
	return []InstanceCase{
		{"cells", instanceSide, instanceSide,
			cells(map[int32][2]int{1: {3, 3}, 2: {7, 7}}),
			cells(map[int32][2]int{4: {3, 3}, 9: {7, 3}})},
		{"empty", instanceSide, instanceSide, cells(nil), cells(nil)},
	}
}

// WantInstanceF1 is the mean over InstanceCases of the NeurIPS-CellSeg F1 at IoU 0.5.
const WantInstanceF1 = (0.5 + 0) / 2

// PointCase is one image's points.
type PointCase struct {
	ID          string
	Truth, Pred []metrics.Nucleus
}

// PointClasses are the point classes of PointCases (PUMA track 1's).
var PointClasses = metrics.PUMAT1Classes

// PointCases are two images of nuclei, every prediction within 15 px of its truth:
//
//   - "tumour": one tumour nucleus, found 2 px away.
//   - "lymphocyte": one TILs nucleus, found 10 px away, and an "other" nucleus predicted
//     where there is none.
func PointCases() []PointCase {
	return []PointCase{
		{"tumour", []metrics.Nucleus{{Class: "tumor", X: 10, Y: 10, Score: 1}},
			[]metrics.Nucleus{{Class: "tumor", X: 12, Y: 10, Score: 1}}},
		{"lymphocyte", []metrics.Nucleus{{Class: "TILs", X: 50, Y: 50, Score: 1}},
			[]metrics.Nucleus{{Class: "TILs", X: 50, Y: 60, Score: 1}, {Class: "other", X: 100, Y: 100, Score: 1}}},
	}
}

// WantPointsF1 is the macro F1 of PointCases under the rule of challenge's grader: a
// task of the user's own ("") or PUMA track 1 average each class's F1 over every image:
// tumour (1 + 0)/2, TILs (0 + 1)/2, other (0 + 0)/2, macro (1/2 + 1/2 + 0)/3.
func WantPointsF1(challenge string) float64 {
	switch challenge {
	case "", "puma-track1-task2":
		return (0.5 + 0.5 + 0) / 3
	}
	panic(fmt.Sprintf("metricstest: no points F1 worked out for challenge %q", challenge))
}

// WriteLabels writes data, a label or instance map on a dims grid, as path (its format by
// its suffix, ".nii.gz" or ".tif"), creating its folder.
func WriteLabels[T uint8 | uint16](path string, dims [3]int, data []T) error {
	v, err := volume.New(volume.DataType(data), [4]int{dims[0], dims[1], dims[2], 1})
	if err != nil {
		return err
	}
	v.Data = data
	v.Spacing = [3]float64{1, 1, 1}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return imageio.Write(path, v)
}

// Uint16 converts an instance map to 16-bit ids, as an instance image file holds them.
func Uint16(ids []int32) []uint16 {
	out := make([]uint16, len(ids))
	for i, v := range ids {
		out[i] = uint16(v)
	}
	return out
}
