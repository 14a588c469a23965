package task

import (
	"fmt"
	"slices"
	"strings"

	"amid/plugins/taskspec"
)

// Policies for a multi-label attribute's uncertain labels (LabelSource.Uncertain).
const (
	UncertainIgnore   = "ignore"
	UncertainPositive = "positive"
	UncertainNegative = "negative"
)

// NoFinding is the finding-names cell that means no finding (NIH ChestX-ray14's),
// matched without regard to case, as an empty cell.
const NoFinding = "No Finding"

// FindingSeparator separates the finding names of a value column's cell.
const FindingSeparator = "|"

// MultiLabel is the task's multi-label attribute, if it has one.
func (t *Task) MultiLabel() (taskspec.Attribute, bool) {
	for _, a := range t.Attributes {
		if a.MultiLabel {
			return a, true
		}
	}
	return taskspec.Attribute{}, false
}

// checkMultiLabel checks a classification's multi-label attribute and its label source:
// a csv label gives it by a value column of finding names or by one column a finding
// (every finding once), never by folders; the policy for uncertain labels is one of
// ignore, positive and negative, and belongs to a multi-label attribute.
func (t *Task) checkMultiLabel() error {
	l := &t.Data.Train.Label
	const field = "data.train.label"
	a, ok := t.MultiLabel()
	if !ok {
		if l.Uncertain != "" {
			return fieldErr(field+".uncertain", "the policy for uncertain labels belongs to a multi-label attribute (multi_label: true), and the task has none")
		}
		return nil
	}
	switch {
	case len(t.Attributes) != 1:
		return fieldErr("attributes", "%s is multi-label, and a multi-label attribute is the task's only attribute (this task has %d)", a.Name, len(t.Attributes))
	case !strings.EqualFold(strings.TrimSpace(t.Metric.Name), "auroc"):
		return fieldErr("metric.name", "%q: a multi-label attribute is scored by the mean AUROC over its findings: write auroc", t.Metric.Name)
	case l.Format == LabelFolder:
		return fieldErr(field, "%s is multi-label: a case carries several findings, which one class folder cannot name; give them in a csv", a.Name)
	case l.Uncertain != "" && !slices.Contains([]string{UncertainIgnore, UncertainPositive, UncertainNegative}, l.Uncertain):
		return fieldErr(field+".uncertain", "%q is not %s, %s or %s", l.Uncertain, UncertainIgnore, UncertainPositive, UncertainNegative)
	}
	for i, c := range a.Classes {
		if strings.TrimSpace(c) == "" || strings.Contains(c, FindingSeparator) || strings.EqualFold(strings.TrimSpace(c), NoFinding) {
			return fieldErr("attributes", "%s's finding %d, %q, is empty, holds %q or is %q", a.Name, i, c, FindingSeparator, NoFinding)
		}
	}
	if l.Format == LabelCSV && len(l.Columns) > 0 {
		for _, f := range a.Classes {
			if !slices.ContainsFunc(l.Columns, func(c string) bool { return strings.EqualFold(strings.TrimSpace(c), f) }) {
				return fieldErr(field+".columns", "finding %s of %s has no column: a multi-label table has one column a finding", f, a.Name)
			}
		}
	}
	return nil
}

// Findings reads a cell of "|"-separated finding names of multi-label attribute a (NIH
// ChestX-ray14's "Effusion|Infiltration"): each a finding, without regard to case or
// surrounding spaces; empty or "No Finding" for none. A finding named twice is one.
func Findings(a taskspec.Attribute, cell string) ([]int, error) {
	out := make([]int, len(a.Classes))
	s := strings.TrimSpace(cell)
	if s == "" || strings.EqualFold(s, NoFinding) {
		return out, nil
	}
	for _, n := range strings.Split(s, FindingSeparator) {
		n = strings.TrimSpace(n)
		k := slices.IndexFunc(a.Classes, func(c string) bool { return strings.EqualFold(c, n) })
		if k < 0 {
			return nil, fmt.Errorf("%s %q is not one of its findings %s (nor %q)", a.Name, n, strings.Join(a.Classes, ", "), NoFinding)
		}
		out[k] = taskspec.FindingPresent
	}
	return out, nil
}

// FindingValue reads a finding's cell of a multi-label table, CheXpert's: 1 present, 0 or
// blank absent, −1 uncertain, read under policy (an uncertain label without a policy is an
// error). Integers may be written as pandas writes them beside blanks ("1.0", "-1.0").
func FindingValue(cell, policy string) (int, error) {
	s := strings.TrimSpace(cell)
	switch strings.ToLower(s) {
	case "", "0", "0.0", "-0", "-0.0", "false":
		return taskspec.FindingAbsent, nil
	case "1", "1.0", "true":
		return taskspec.FindingPresent, nil
	case "-1", "-1.0":
		switch policy {
		case UncertainIgnore:
			return taskspec.FindingUncertain, nil
		case UncertainPositive:
			return taskspec.FindingPresent, nil
		case UncertainNegative:
			return taskspec.FindingAbsent, nil
		}
		return 0, fmt.Errorf("%q is uncertain, and the label names no policy for it: write uncertain: ignore, positive or negative", s)
	}
	return 0, fmt.Errorf("%q is not 1, 0, -1 (uncertain) or blank", s)
}
