package grade

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"amid/plugins/metrics"
)

func init() {
	Register("topcow-track1-task2", topcowBoxGrader("topcow-track1-task2"))
	Register("topcow-track2-task2", topcowBoxGrader("topcow-track2-task2"))
}

// topcowBoxGrader grades TopCoW CoW-ROI detection (rexmle.md §6.11 Det; both modalities
// share the grader): submission.csv image_id,predicted_bbox_path naming a JSON
// {"size":[x,y,z],"location":[x,y,z]} (location = 0-indexed minimum corner) or an ROI .txt
// ("Size (Voxels): …" on line 2, "Location (Voxels): …" on line 3); answers
// test_labels.csv image_id,label_path. iou and boundary_iou are the means of
// metrics.BoxIoUReX at ratios 0.5 and 0.2 (boxes dilated outward, as the ReX grader does);
// with Options.Official the official inward-shell metric metrics.BoxIoUTopCoW is used.
func topcowBoxGrader(id string) Grader {
	return GraderFunc(func(ctx context.Context, subDir, ansDir string, opt Options) (*Result, error) {
		at, ids, err := ReadAnswers(ansDir, "image_id", "label_path")
		if err != nil {
			return nil, err
		}
		gtPath := answerPaths(at, ids, "label_path", ansDir)
		var p Problems
		col := "predicted_bbox_path"
		s := ReadSubmission(subDir, Spec{IDColumn: "image_id", FileColumns: []string{col}, Exts: []string{".json", ".txt"}}, ids, &p)
		if s == nil || !s.Table.Has(col) || !s.Table.Has("image_id") {
			return Invalid(p.List()), nil
		}
		var ious, bious []float64
		for _, cid := range ids {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if _, ok := s.Row[cid]; !ok || !fileExists(s.File(cid, col)) {
				continue
			}
			pb, err := readBox(s.File(cid, col))
			if err != nil {
				p.Addf("row %q: %v.", cid, err)
				continue
			}
			gb, err := readBox(gtPath[cid])
			if err != nil {
				return nil, fmt.Errorf("grade: %s answers: %w", id, err)
			}
			if opt.Official {
				a, err1 := metrics.BoxIoUTopCoW(gb, pb, metrics.BoxIoURatio)
				b, err2 := metrics.BoxIoUTopCoW(gb, pb, metrics.BoxBoundaryRatio)
				if err1 != nil || err2 != nil {
					p.Addf("row %q: %v.", cid, firstErr(err1, err2))
					continue
				}
				ious, bious = append(ious, a), append(bious, b)
				continue
			}
			ious = append(ious, metrics.BoxIoUReX(gb, pb, metrics.BoxIoURatio))
			bious = append(bious, metrics.BoxIoUReX(gb, pb, metrics.BoxBoundaryRatio))
		}
		if !p.Empty() {
			return Invalid(p.List()), nil
		}
		return Finish(id, "boundary_iou", map[string]float64{
			"boundary_iou": metrics.NumpyMean(bious),
			"iou":          metrics.NumpyMean(ious),
		})
	})
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

var boxDigits = regexp.MustCompile(`\b\d+\b`)

// readBox reads a TopCoW ROI as the grader's parse_roi_json / parse_roi_txt do: JSON
// "size" and "location" cast with int(); .txt integers found on lines 2 and 3.
func readBox(path string) (metrics.Box3D, error) {
	var b metrics.Box3D
	raw, err := os.ReadFile(path)
	if err != nil {
		return b, err
	}
	if int64(len(raw)) > MaxCSVBytes {
		return b, fmt.Errorf("%s is %d bytes, too large for a box file", path, len(raw))
	}
	if strings.HasSuffix(strings.ToLower(path), ".txt") {
		lines := strings.Split(string(raw), "\n")
		if len(lines) < 3 {
			return b, fmt.Errorf("%s has %d lines; an ROI file has size on line 2 and location on line 3", path, len(lines))
		}
		for k, dst := range []*[3]int{&b.Size, &b.Location} {
			nums := boxDigits.FindAllString(lines[k+1], -1)
			if len(nums) != 3 {
				return b, fmt.Errorf("%s line %d holds %d integers, want 3", path, k+2, len(nums))
			}
			for i, s := range nums {
				v, err := strconv.Atoi(s)
				if err != nil {
					return b, fmt.Errorf("%s line %d: %w", path, k+2, err)
				}
				dst[i] = v
			}
		}
		return b, nil
	}
	var j struct {
		Size     []float64 `json:"size"`
		Location []float64 `json:"location"`
	}
	if err := json.Unmarshal(raw, &j); err != nil {
		return b, fmt.Errorf("%s is not a box JSON: %w", path, err)
	}
	if len(j.Size) != 3 || len(j.Location) != 3 {
		return b, fmt.Errorf("%s: size and location must hold 3 numbers each", path)
	}
	for i := 0; i < 3; i++ {
		b.Size[i], b.Location[i] = int(j.Size[i]), int(j.Location[i])
	}
	return b, nil
}
