package predict

import (
	"fmt"
	"os"
	"path/filepath"

	"amid/plugins/taskspec"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// Unionable reports whether predictions of the task's kind can be combined: the mean of
// regressed scores (iqa), the mean of enhanced images, the union of binary masks.
func Unionable(s *taskspec.Spec) bool {
	switch s.Kind {
	case taskspec.IQA, taskspec.Enhancement:
		return true
	case taskspec.Segmentation:
		return !s.Instances && len(s.Labels) == 2
	}
	return false
}

// Combinable reports whether a fold ensemble's predictions of the task's kind can be
// combined: a vote of label maps (segmentation without instances), the mean of scores
// (iqa) or of images (enhancement).
func Combinable(s *taskspec.Spec) bool {
	switch s.Kind {
	case taskspec.IQA, taskspec.Enhancement:
		return true
	case taskspec.Segmentation:
		return !s.Instances
	}
	return false
}

// combine writes the members' prediction files of one case combined to out, named as the
// first member's file: the union of binary masks, or with vote each voxel's most frequent
// label (the earliest member's on a tie); the mean of scores and images.
func combine(s *taskspec.Spec, files []string, outDir string, vote bool) (string, error) {
	out := filepath.Join(outDir, filepath.Base(files[0]))
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", err
	}
	if s.Kind == taskspec.IQA {
		var sum float64
		for _, f := range files {
			a, err := taskspec.ReadAnnotation(f, s)
			if err != nil {
				return "", err
			}
			if a.Score == nil {
				return "", fmt.Errorf("%s has no score", f)
			}
			sum += *a.Score
		}
		mean := sum / float64(len(files))
		return out, (&taskspec.Annotation{Score: &mean}).WriteFile(out)
	}
	if vote && s.Kind == taskspec.Segmentation {
		return out, voteLabels(files, out)
	}
	return out, reduce(files, out, s.Kind == taskspec.Segmentation)
}

// reduce writes to out the voxelwise maximum (union: of 0 / label masks) or mean of the
// images files, on the first's grid and in its type.
func reduce(files []string, out string, union bool) error {
	var acc *volume.Volume
	var vals []float64
	for i, f := range files {
		v, err := imageio.Read(f)
		if err != nil {
			return err
		}
		if i == 0 {
			acc, vals = v, make([]float64, v.Len())
		} else if v.Dims != acc.Dims {
			return fmt.Errorf("%s is %v but %s is %v", f, v.Dims, files[0], acc.Dims)
		}
		for j := range vals {
			x := v.AtIndex(j)
			if union {
				vals[j] = max(vals[j], x)
			} else {
				vals[j] += x / float64(len(files))
			}
		}
	}
	for j, x := range vals {
		acc.SetIndex(j, x)
	}
	return imageio.Write(out, acc)
}

// voteLabels writes to out each voxel's most frequent label among the label maps files,
// the earliest file's label on a tie.
func voteLabels(files []string, out string) error {
	vols := make([]*volume.Volume, len(files))
	for i, f := range files {
		v, err := imageio.Read(f)
		if err != nil {
			return err
		}
		if i > 0 && v.Dims != vols[0].Dims {
			return fmt.Errorf("%s is %v but %s is %v", f, v.Dims, files[0], vols[0].Dims)
		}
		vols[i] = v
	}
	acc := vols[0] // each voxel is written after every member's value of it was read
	count := map[float64]int{}
	for j := range acc.Len() {
		clear(count)
		n := 0
		for _, v := range vols {
			x := v.AtIndex(j)
			count[x]++
			n = max(n, count[x])
		}
		for _, v := range vols {
			if x := v.AtIndex(j); count[x] == n {
				acc.SetIndex(j, x)
				break
			}
		}
	}
	return imageio.Write(out, acc)
}
