package run

import (
	"fmt"
	"sort"
	"strings"

	"amid/host/audit"
	"amid/host/folds"
	"amid/host/task"
	"amid/plugins/taskspec"
)

// caseClasses are the classes each training case holds, for a split stratified by class
// (amid/host/folds): a classification case's class of each attribute ("grade=G3") or the
// findings it holds of a multi-label attribute ("findings=Effusion"), a
// detection case's box classes (with their attribute, or "object" when the task names no
// attribute) and its point classes. Segmentation, IQA and enhancement cases hold none:
// their split is not stratified. labels maps case ids to canonical label files
// (amid/host/ingest).
func caseClasses(spec *taskspec.Spec, cases []task.Case, labels map[string]string) (map[string][]string, error) {
	if spec.Kind != taskspec.Classification && spec.Kind != taskspec.Detection {
		return nil, nil
	}
	out := make(map[string][]string, len(cases))
	for _, c := range cases {
		a, err := taskspec.ReadAnnotation(labels[c.ID], spec)
		if err != nil {
			return nil, fmt.Errorf("case %s: classes for the folds: %w", c.ID, err)
		}
		set := map[string]bool{}
		named := func(name string, k int) {
			if at, ok := spec.Attribute(name); ok && k >= 0 && k < len(at.Classes) {
				set[name+"="+at.Classes[k]] = true
			}
		}
		for name, k := range a.Classes {
			named(name, k)
		}
		for name, fs := range a.Findings {
			for k, v := range fs {
				if v == taskspec.FindingPresent {
					named(name, k)
				}
			}
		}
		for _, b := range a.Boxes {
			if len(spec.Attributes) == 0 {
				set["object"] = true
			}
			for name, k := range b.Attrs {
				named(name, k)
			}
		}
		for _, p := range a.Points {
			set["point="+p.Class] = true
		}
		cls := make([]string, 0, len(set))
		for s := range set {
			cls = append(cls, s)
		}
		sort.Strings(cls)
		out[c.ID] = cls
	}
	return out, nil
}

// lockFolds locks the folds of the training cases, stratified by class where the task's
// labels have classes, saves them to folds.json, and logs and records (folds.locked) the
// folds whose validation cases lack classes; trainIDs is the hash of the training ids.
func (r *Runner) lockFolds(train []task.Case, trainIDs string, patients int) error {
	classes, err := caseClasses(r.task.Spec(), train, r.labels)
	if err != nil {
		return err
	}
	var fl *folds.Folds
	if r.st.From != nil {
		fl, err = r.extendFolds(train, classes)
	} else {
		fl, err = folds.LockStratified(train, classes, r.st.Folds, r.st.Seed)
	}
	if err != nil {
		return err
	}
	r.st.Folds = fl.K
	if err := fl.Save(r.path("folds.json")); err != nil {
		return err
	}
	stratified := fl.Classes != nil
	how := ""
	if stratified {
		how = ", stratified by class"
	}
	r.logf("%d folds locked%s (sha256 %s)", fl.K, how, fl.Hash[:12])
	gaps := fl.Gaps()
	for _, g := range gaps {
		if g.Fold == 0 {
			r.logf("warning: no fold holds every class with these patients; %s, and exploration ranks the lanes on fold 0, so its scores overstate a model that never predicts those classes", g)
			continue
		}
		r.logf("warning: %s (too few patients hold them for every fold); its validation scores do not count towards a lane's mean or the choice of its fold model", g)
	}
	details := map[string]any{"k": fl.K, "seed": fl.Seed, "patients": patients, "test_cases_in_folds": 0, "stratified": stratified}
	if len(gaps) > 0 {
		details["gaps"] = gaps
	}
	in := map[string]string{"train_ids": trainIDs}
	if fl.Parent != "" {
		in["parent_folds"] = fl.Parent // every case of the parent's folds kept its fold
	}
	return r.record(audit.RoleHost, audit.ActionFoldsLocked, in, map[string]string{"folds": fl.Hash}, details)
}

// lacksText is " (lacks a, b)" for a fold whose validation cases lack classes, else "".
func lacksText(lacks []string) string {
	if len(lacks) == 0 {
		return ""
	}
	return " (lacks " + strings.Join(lacks, ", ") + ")"
}
