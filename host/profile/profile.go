// Package profile computes a dataset's fingerprint and checks its data contract before any
// training.
//
// The fingerprint is in the spirit of nnU-Net's dataset_fingerprint.json: shapes and
// spacings, anisotropy, foreground intensity percentiles, class frequencies and object
// counts for segmentation; box, point, attribute and score statistics for the other kinds.
// It holds statistics only — no case ids, file paths, pixels or DICOM tags — so it is what a
// planner, the LLM planner included, may see.
//
// The data contract ([Contract]) lists every problem found: an image whose channels or
// label disagree in geometry, a label value outside the task's set, a case whose image
// bytes also appear in the other split, unreadable files, a DICOM series resampled onto a
// regular grid (gantry tilt, uneven spacing). Problems of severity Fatal stop a run;
// Warnings are recorded in the audit log; Notes say what was passed over in a case's
// DICOM folder (localizers, reports, series of too few slices).
package profile

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"

	"amid/assets/fileio"
	"amid/host/task"
	"amid/plugins/taskspec"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// Version is the fingerprint format's version.
const Version = 1

// samplesPerCase bounds the foreground intensities kept per case for the percentiles.
const samplesPerCase = 10000

// Shape is one training case's grid, in (D, H, W) = (Z, Y, X) order as the segmentation
// planner reads it.
type Shape struct {
	Dims    [3]int     `json:"dims"`
	Spacing [3]float64 `json:"spacing"`
	// ClassVoxels and ClassMeans are, for a segmentation case, each label's voxel count
	// in the task's label order and the mean of the first channel under it (0 where the
	// label has no voxel): whether the same class has the same intensity in every case
	// tells the planner whether the images share one intensity scale.
	ClassVoxels []int64   `json:"class_voxels,omitempty"`
	ClassMeans  []float64 `json:"class_means,omitempty"`
}

// Fingerprint summarises a task's dataset.
type Fingerprint struct {
	Version  int    `json:"version"`
	Kind     string `json:"kind"`
	Dims     int    `json:"task_dims"`
	Modality string `json:"modality"`
	Channels int    `json:"channels"`
	Classes  int    `json:"classes"`
	Train    int    `json:"train_cases"`
	Test     int    `json:"test_cases"`
	Patients int    `json:"patients"`

	Cases         []Shape    `json:"cases"`
	MedianShape   [3]int     `json:"median_shape"`
	MedianSpacing [3]float64 `json:"median_spacing"`
	// Anisotropy is the largest median spacing over the smallest.
	Anisotropy float64 `json:"anisotropy"`

	// Foreground intensity statistics of the first channel (segmentation: voxels under
	// a non-zero label; other kinds: every voxel).
	FGLow  float64 `json:"fg_p00_5"`
	FGHigh float64 `json:"fg_p99_5"`
	FGMean float64 `json:"fg_mean"`
	FGStd  float64 `json:"fg_std"`
	// Intensity is the first channel's 0.5, 50 and 99.5 percentiles over all voxels.
	Intensity [3]float64 `json:"intensity_percentiles"`

	// ClassFrequency is each label's fraction of all labelled voxels, in the task's
	// label order; Objects the mean number of connected objects per case per label and
	// ObjectVoxels their median size.
	ClassFrequency []float64 `json:"class_frequency,omitempty"`
	CasesWithClass []int     `json:"cases_with_class,omitempty"`

	Boxes      *BoxStats                 `json:"boxes,omitempty"`
	Points     *PointStats               `json:"points,omitempty"`
	Box3D      *Box3DStats               `json:"box3d,omitempty"`
	Attributes map[string][]int          `json:"attributes,omitempty"` // class counts per attribute
	Variants   map[string]map[string]int `json:"variants,omitempty"`   // per group, count of each joint value
	Scores     *ScoreStats               `json:"scores,omitempty"`
}

// BoxStats describes 2D boxes.
type BoxStats struct {
	PerImage     float64 `json:"per_image"`
	MedianWidth  float64 `json:"median_width"`
	MedianHeight float64 `json:"median_height"`
	MinSide      float64 `json:"min_side"`
	MaxSide      float64 `json:"max_side"`
}

// PointStats describes point objects.
type PointStats struct {
	PerImage float64        `json:"per_image"`
	Classes  map[string]int `json:"classes"`
}

// Box3DStats describes one-box-per-volume annotations, relative to the volume's size.
type Box3DStats struct {
	MedianSize   [3]float64 `json:"median_size"`
	MedianCentre [3]float64 `json:"median_relative_centre"`
}

// ScoreStats describes regressed scores.
type ScoreStats struct {
	Min, Max, Mean, Std float64
	// Step is the grid the scores lie on (0 when they do not lie on a grid of at most
	// 100 values).
	Step      float64 `json:"step"`
	Histogram []int   `json:"histogram"` // 10 equal bins from Min to Max
}

// Severity of a contract problem.
type Severity string

// Severities.
const (
	Fatal   Severity = "fatal"
	Warning Severity = "warning"
	// Note records what was passed over without harm: a localizer, a report or a series
	// of too few slices beside a case's chosen DICOM series.
	Note Severity = "note"
)

// Problem is one broken rule of the data contract, a sentence naming the case and file.
type Problem struct {
	Severity Severity `json:"severity"`
	Case     string   `json:"case,omitempty"`
	Message  string   `json:"message"`
}

// Contract is the outcome of the data-contract checks.
type Contract struct {
	Problems []Problem `json:"problems"`
	// Hashes maps each case id to the sha256 of its first image file, for the audit log.
	Hashes map[string]string `json:"hashes"`
}

// OK reports whether no problem is fatal.
func (c *Contract) OK() bool {
	for _, p := range c.Problems {
		if p.Severity == Fatal {
			return false
		}
	}
	return true
}

// Err returns the first fatal problem as an error, or nil.
func (c *Contract) Err() error {
	for _, p := range c.Problems {
		if p.Severity == Fatal {
			return fmt.Errorf("data contract: %s", p.Message)
		}
	}
	return nil
}

func (c *Contract) add(s Severity, id, format string, args ...any) {
	c.Problems = append(c.Problems, Problem{Severity: s, Case: id, Message: fmt.Sprintf(format, args...)})
}

// Profile reads every training case (labels from the canonical files of amid/host/ingest,
// by case id) and every test case's header and bytes, and returns the fingerprint and the
// contract. An error means profiling could not run (cancelled); problems with the data are
// in the contract.
func Profile(ctx context.Context, t *task.Task, d *task.Dataset, labels map[string]string) (*Fingerprint, *Contract, error) {
	spec := t.Spec()
	f := &Fingerprint{
		Version: Version, Kind: t.Kind, Dims: t.Dims, Modality: t.Modality,
		Channels: max(len(t.Data.Train.Images), 1), Train: len(d.Train), Test: len(d.Test),
	}
	if len(t.Channels) > 0 {
		f.Channels = len(t.Channels)
	}
	if t.Kind == taskspec.Segmentation {
		f.Classes = len(t.Labels)
	}
	c := &Contract{Hashes: map[string]string{}}
	patients := map[string]bool{}
	var fg, all []float64
	var counts []int64
	if f.Classes > 0 {
		counts = make([]int64, f.Classes)
		f.CasesWithClass = make([]int, f.Classes)
	}
	labelIndex := map[int]int{}
	for i, l := range t.Labels {
		labelIndex[l.Value] = i
	}
	acc := newAnnAcc(spec)
	// What choosing each case's DICOM series passed over, and how a chosen series is
	// resampled (amid/host/task).
	for _, split := range [][]task.Case{d.Train, d.Test} {
		for _, cs := range split {
			for _, w := range cs.Warnings {
				c.add(Warning, cs.ID, "case %s: %s", cs.ID, w)
			}
			for _, n := range cs.Notes {
				c.add(Note, cs.ID, "case %s: %s", cs.ID, n)
			}
		}
	}
	for i, cs := range d.Train {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		patients[cs.Patient] = true
		img, err := readChannels(cs, c)
		if err != nil {
			c.add(Fatal, cs.ID, "%v", err)
			continue
		}
		if i == 0 && f.Modality == "" && img.Dims[3] == 3 {
			f.Modality = "RGB"
		}
		if img.Dims[3] > 1 && len(cs.Images) == 1 {
			f.Channels = img.Dims[3]
		}
		f.Cases = append(f.Cases, Shape{
			Dims:    [3]int{img.Dims[2], img.Dims[1], img.Dims[0]},
			Spacing: [3]float64{img.Spacing[2], img.Spacing[1], img.Spacing[0]},
		})
		if bad := nonFinite(img); bad > 0 {
			c.add(Warning, cs.ID, "case %s: %s has %d NaN or infinite values; they are treated as 0", cs.ID, cs.Images[0], bad)
		}
		lab := labels[cs.ID]
		if lab == "" {
			c.add(Fatal, cs.ID, "case %s has no label", cs.ID)
			continue
		}
		switch t.Kind {
		case taskspec.Segmentation:
			lv, err := imageio.Read(lab)
			if err != nil {
				c.add(Fatal, cs.ID, "case %s: label %s cannot be read: %v", cs.ID, lab, err)
				continue
			}
			if lv.Dims[0] != img.Dims[0] || lv.Dims[1] != img.Dims[1] || lv.Dims[2] != img.Dims[2] {
				c.add(Fatal, cs.ID, "case %s: label %s is %v but the image %s is %v", cs.ID, lab, lv.Dims[:3], cs.Images[0], img.Dims[:3])
				continue
			}
			if !t.Instances {
				sh := &f.Cases[len(f.Cases)-1]
				sampleLabels(img, lv, labelIndex, counts, sh, &fg, c, cs.ID, lab)
				for k, n := range sh.ClassVoxels {
					if n > 0 {
						f.CasesWithClass[k]++
					}
				}
			} else {
				sampleForeground(img, lv, &fg)
			}
		case taskspec.Enhancement:
			tv, err := imageio.Read(lab)
			if err != nil {
				c.add(Fatal, cs.ID, "case %s: target %s cannot be read: %v", cs.ID, lab, err)
				continue
			}
			if tv.Dims != img.Dims {
				c.add(Fatal, cs.ID, "case %s: target %s is %v but the input %s is %v", cs.ID, lab, tv.Dims, cs.Images[0], img.Dims)
			}
		default:
			a, err := taskspec.ReadAnnotation(lab, spec)
			if err != nil {
				c.add(Fatal, cs.ID, "case %s: %v", cs.ID, err)
				continue
			}
			if err := acc.add(a, img); err != nil {
				c.add(Fatal, cs.ID, "case %s: label %s: %v", cs.ID, lab, err)
			}
			if what := noObject(spec, a); what != "" {
				// The detection plugin refused such a case only when a lane trained, and
				// every lane failed.
				c.add(Fatal, cs.ID, "case %s: label %s lists no %s, and the detection plugin trains on cases that hold one (cases without findings are not supported yet)", cs.ID, lab, what)
			}
		}
		all = append(all, sample(img, samplesPerCase)...)
	}
	f.Patients = len(patients)
	for _, cs := range d.Test {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		for k, p := range cs.Images {
			if _, err := imageio.Read(p); err != nil {
				c.add(Fatal, cs.ID, "test case %s: image %s cannot be read: %v", cs.ID, p, err)
				break
			}
			if k == 0 {
				h, err := fileio.PathSHA256(p)
				if err != nil {
					return nil, nil, err
				}
				c.Hashes[cs.ID] = h
			}
		}
	}
	duplicates(d, c)
	shapes(f)
	if len(fg) == 0 {
		fg = all
	}
	f.FGLow, f.FGHigh = percentile(fg, 0.5), percentile(fg, 99.5)
	f.FGMean, f.FGStd = meanStd(fg)
	f.Intensity = [3]float64{percentile(all, 0.5), percentile(all, 50), percentile(all, 99.5)}
	if counts != nil {
		var total int64
		for _, n := range counts {
			total += n
		}
		f.ClassFrequency = make([]float64, len(counts))
		for k, n := range counts {
			if total > 0 {
				f.ClassFrequency[k] = float64(n) / float64(total)
			}
		}
		for k, n := range f.CasesWithClass {
			if k > 0 && n == 0 && len(d.Train) > 0 {
				c.add(Warning, "", "label %d (%s) appears in no training case", t.Labels[k].Value, t.Labels[k].Name)
			}
		}
	}
	acc.finish(f)
	return f, c, nil
}

// readChannels reads a case's channel files, checks they share a grid, and returns the
// first (with every channel stacked when the files are single-channel).
func readChannels(cs task.Case, c *Contract) (*volume.Volume, error) {
	var first *volume.Volume
	for k, p := range cs.Images {
		v, err := imageio.Read(p)
		if err != nil {
			return nil, fmt.Errorf("case %s: image %s cannot be read: %w", cs.ID, p, err)
		}
		if k == 0 {
			first = v
			h, err := fileio.PathSHA256(p)
			if err != nil {
				return nil, err
			}
			c.Hashes[cs.ID] = h
			continue
		}
		if [3]int(v.Dims[:3]) != [3]int(first.Dims[:3]) {
			return nil, fmt.Errorf("case %s: channel %s is %v but %s is %v", cs.ID, p, v.Dims[:3], cs.Images[0], first.Dims[:3])
		}
		if !volume.SameGrid(first, v, 1e-3) {
			c.add(Warning, cs.ID, "case %s: channel %s is not on the grid of %s (spacing, origin or direction differ); it is used voxel by voxel", cs.ID, p, cs.Images[0])
		}
	}
	return first, nil
}

// duplicates reports a test case whose first image has the same bytes as a training case's.
func duplicates(d *task.Dataset, c *Contract) {
	train := map[string]string{}
	for _, cs := range d.Train {
		if h := c.Hashes[cs.ID]; h != "" {
			if other, dup := train[h]; dup {
				c.add(Warning, cs.ID, "training cases %s and %s have identical images", other, cs.ID)
			}
			train[h] = cs.ID
		}
	}
	for _, cs := range d.Test {
		if other, dup := train[c.Hashes[cs.ID]]; dup && c.Hashes[cs.ID] != "" {
			c.add(Fatal, cs.ID, "test case %s has the same image bytes as training case %s: the splits overlap", cs.ID, other)
		}
	}
}

func nonFinite(v *volume.Volume) int {
	d, ok := v.Data.([]float32)
	if ok {
		n := 0
		for _, x := range d {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				n++
			}
		}
		return n
	}
	if d, ok := v.Data.([]float64); ok {
		n := 0
		for _, x := range d {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				n++
			}
		}
		return n
	}
	return 0
}

// sample returns up to n first-channel values spread evenly over the image.
func sample(v *volume.Volume, n int) []float64 {
	vox := v.NumVoxels()
	step := max(vox/n, 1)
	out := make([]float64, 0, min(n, vox))
	for i := 0; i < vox; i += step {
		x := v.AtIndex(i * v.Dims[3])
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out = append(out, x)
		}
	}
	return out
}

// sampleLabels counts label voxels (in counts, and the case's own in sh with the mean
// intensity under each label), flags illegal values and samples foreground intensities.
// Non-finite voxels count for their label but not for its mean.
func sampleLabels(img, lab *volume.Volume, index map[int]int, counts []int64, sh *Shape, fg *[]float64, c *Contract, id, path string) {
	vox := lab.NumVoxels()
	illegal := map[int]int{}
	var fgIdx []int
	sh.ClassVoxels, sh.ClassMeans = make([]int64, len(counts)), make([]float64, len(counts))
	finite := make([]int64, len(counts))
	for i := range vox {
		l := int(lab.AtIndex(i * lab.Dims[3]))
		k, ok := index[l]
		if !ok {
			illegal[l]++
			continue
		}
		counts[k]++
		sh.ClassVoxels[k]++
		if x := img.AtIndex(i * img.Dims[3]); !math.IsNaN(x) && !math.IsInf(x, 0) {
			sh.ClassMeans[k] += x
			finite[k]++
		}
		if k > 0 {
			fgIdx = append(fgIdx, i)
		}
	}
	for k, n := range finite {
		if n > 0 {
			sh.ClassMeans[k] /= float64(n)
		}
	}
	if len(illegal) > 0 {
		vals := make([]int, 0, len(illegal))
		for v := range illegal {
			vals = append(vals, v)
		}
		sort.Ints(vals)
		c.add(Fatal, id, "case %s: label %s has values %v outside the task's labels", id, path, vals)
	}
	step := max(len(fgIdx)/samplesPerCase, 1)
	for j := 0; j < len(fgIdx); j += step {
		x := img.AtIndex(fgIdx[j] * img.Dims[3])
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			*fg = append(*fg, x)
		}
	}
}

func sampleForeground(img, lab *volume.Volume, fg *[]float64) {
	vox := lab.NumVoxels()
	step := max(vox/samplesPerCase, 1)
	for i := 0; i < vox; i += step {
		if lab.AtIndex(i*lab.Dims[3]) != 0 {
			*fg = append(*fg, img.AtIndex(i*img.Dims[3]))
		}
	}
}

func shapes(f *Fingerprint) {
	if len(f.Cases) == 0 {
		return
	}
	for a := range 3 {
		d := make([]float64, len(f.Cases))
		s := make([]float64, len(f.Cases))
		for i, c := range f.Cases {
			d[i], s[i] = float64(c.Dims[a]), c.Spacing[a]
		}
		f.MedianShape[a] = int(math.Round(percentile(d, 50)))
		f.MedianSpacing[a] = percentile(s, 50)
	}
	sp := f.MedianSpacing[:]
	if f.Dims == 2 {
		sp = sp[1:]
	}
	lo, hi := slices.Min(sp), slices.Max(sp)
	if lo > 0 {
		f.Anisotropy = hi / lo
	}
}

// percentile is numpy's linear-interpolation percentile of v (sorted in place).
func percentile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	pos := q / 100 * float64(len(v)-1)
	i := int(math.Floor(pos))
	if i >= len(v)-1 {
		return v[len(v)-1]
	}
	fr := pos - float64(i)
	return v[i]*(1-fr) + v[i+1]*fr
}

func meanStd(v []float64) (float64, float64) {
	if len(v) == 0 {
		return 0, 0
	}
	var s, s2 float64
	for _, x := range v {
		s += x
	}
	m := s / float64(len(v))
	for _, x := range v {
		s2 += (x - m) * (x - m)
	}
	return m, math.Sqrt(s2 / float64(len(v)))
}

// noObject names the objects a detection label of spec must hold and a lacks ("boxes",
// "points", "box3d"); "" when it holds one, or the task is not detection.
func noObject(spec *taskspec.Spec, a *taskspec.Annotation) string {
	switch {
	case spec.Kind != taskspec.Detection:
		return ""
	case spec.Box3D && a.Box3D == nil:
		return "box3d"
	case spec.Box3D:
		return ""
	case len(spec.Points) > 0 && len(a.Points) == 0:
		return "points"
	case len(spec.Points) == 0 && len(a.Boxes) == 0:
		return "boxes"
	}
	return ""
}
