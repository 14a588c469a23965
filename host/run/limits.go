package run

import (
	"fmt"
	"maps"
	"os"
	"slices"

	"amid/assets/fileio"
	"amid/host/audit"
	"amid/host/folds"
	"amid/host/profile"
	"amid/host/task"
	"amid/plugins/taskspec"
)

// stateLimits finds what the data allows (dataLimits), logs each limit, keeps them in the
// run's state for the reports and records them in the audit log (data.limits); asked is
// the number of folds the run asked for.
func (r *Runner) stateLimits(d *task.Dataset, fp *profile.Fingerprint, asked int) error {
	fl, err := r.folds()
	if err != nil {
		return err
	}
	r.st.Limits = r.dataLimits(d, fp, fl, asked)
	if len(r.st.Limits) == 0 {
		return nil
	}
	for _, l := range r.st.Limits {
		r.logf("what the data allows: %s", l)
	}
	return r.record(audit.RoleHost, "data.limits", nil, nil, map[string]any{"limits": r.st.Limits})
}

// dataLimits are, a sentence each, the ways the dataset d limits what a run can learn or
// show, with fp its profile and fl its locked folds (asked folds were asked for): fewer
// folds than asked, a validation of one case a fold, a single test case, a class in one
// training case only, no training case with a label, every training case with the same
// label, every training image the same, images of one pixel. None for a dataset with
// none of these.
func (r *Runner) dataLimits(d *task.Dataset, fp *profile.Fingerprint, fl *folds.Folds, asked int) []string {
	var out []string
	n := len(d.Train)
	if asked > 0 && fl.K < asked {
		out = append(out, fmt.Sprintf("%d training cases (%d patients) make %d folds rather than the %d asked: the folds' mean validation rests on fewer models", n, max(fp.Patients, 1), fl.K, asked))
	}
	smallest := n
	for k := range fl.K {
		if _, val, err := fl.Split(d.Train, k); err == nil {
			smallest = min(smallest, len(val))
		}
	}
	if smallest == 1 {
		out = append(out, "a fold validates on one case: its score is one case's, and a correlation or an AUROC is undefined there")
	}
	if len(d.Test) == 1 {
		out = append(out, "1 test case: the test score is that case's alone, with no spread to judge it by")
	}
	// How many training cases hold each class: a segmentation's labels but the
	// background, a classification's classes, a detection's box and point classes.
	held, counted := map[string]int{}, false
	switch r.task.Kind {
	case taskspec.Segmentation:
		for i, c := range fp.CasesWithClass {
			if i < len(r.task.Labels) && r.task.Labels[i].Value != 0 {
				held[r.task.Labels[i].Name], counted = c, true
			}
		}
	case taskspec.Classification, taskspec.Detection:
		if classes, err := caseClasses(r.task.Spec(), d.Train, r.labels); err == nil {
			for _, cs := range classes {
				for _, c := range cs {
					held[c]++
				}
			}
			counted = true
		}
	}
	if n > 1 {
		for _, c := range slices.Sorted(maps.Keys(held)) {
			if held[c] == 1 {
				out = append(out, fmt.Sprintf("class %s is in only 1 of the %d training cases: the fold that validates on it never trained on it, and the folds that trained on it cannot validate it", c, n))
			}
		}
	}
	if counted && n > 0 && r.task.Kind != taskspec.Classification {
		none := true
		for _, k := range held {
			none = none && k == 0
		}
		if none {
			out = append(out, "no training case holds a label (no foreground, box or point): a model can only learn to predict none")
		}
	}
	var labels []string
	for _, c := range d.Train {
		labels = append(labels, r.labels[c.ID])
	}
	if n > 1 && sameFiles(labels) {
		out = append(out, fmt.Sprintf("all %d training cases have the same label: a model can only learn to predict it", n))
	}
	if n > 1 && sameImages(d.Train) {
		out = append(out, fmt.Sprintf("all %d training cases have the same images: nothing tells them apart but their labels", n))
	}
	one := len(fp.Cases) > 0
	for _, s := range fp.Cases {
		one = one && s.Dims == [3]int{1, 1, 1}
	}
	if one {
		out = append(out, "every training image is one pixel: there is no neighbourhood to learn from")
	}
	return out
}

// sameImages reports whether every case's images are, file by file, the same bytes
// (cases whose images are DICOM folders are not compared: false).
func sameImages(cases []task.Case) bool {
	for i := range cases[0].Images {
		var files []string
		for _, c := range cases {
			if i >= len(c.Images) {
				return false
			}
			files = append(files, c.Images[i])
		}
		if !sameFiles(files) {
			return false
		}
	}
	return len(cases[0].Images) > 0
}

// sameFiles reports whether the regular files at paths hold the same bytes; false for a
// path that cannot be read as a file (a folder), or none. Sizes are compared first, so a
// dataset whose files differ is not read for it.
func sameFiles(paths []string) bool {
	if len(paths) == 0 {
		return false
	}
	var size int64
	for i, p := range paths {
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() || i > 0 && fi.Size() != size {
			return false
		}
		size = fi.Size()
	}
	first, err := fileio.SHA256(paths[0])
	if err != nil {
		return false
	}
	for _, p := range paths[1:] {
		if sum, err := fileio.SHA256(p); err != nil || sum != first {
			return false
		}
	}
	return true
}
