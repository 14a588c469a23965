package run

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"amid/host/evaluate"
)

// Report is a run's summary in Markdown: the lanes with their per-fold validation scores,
// the choice and why, and the grader's verdict when there was one.
func Report(st *State) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Run %s\n\n", st.ID)
	spent := ""
	if st.Budget > 0 {
		spent = fmt.Sprintf(" (%.1f %%)", 100*st.Spent.Seconds()/st.Budget.Seconds())
	}
	fmt.Fprintf(&b, "- Task: %s\n- Data: %s\n- Phase: %s\n- Budget: %v, spent %v%s\n- Planner: %s\n- Folds: %d, seed %d\n\n",
		st.Task, st.Data, st.Phase, st.Budget, st.Spent.Round(time.Second), spent, st.Planner, st.Folds, st.Seed)
	if u := budgetUnused(st, st.Spent); u != "" && st.Phase == PhaseDone {
		fmt.Fprintf(&b, "## Why the budget was not all used\n\n%s\n\n", upperFirst(u))
	}
	if len(st.Limits) > 0 {
		b.WriteString("## What the data allows\n\n")
		for _, l := range st.Limits {
			fmt.Fprintf(&b, "- %s\n", upperFirst(l))
		}
		b.WriteString("\n")
	}
	if len(st.Lanes) > 0 {
		b.WriteString("## Lanes\n\n| lane | plugin | folds done | mean validation | per fold |\n|---|---|---|---|---|\n")
		for _, l := range st.Lanes {
			_, n := l.Mean()
			mean, per := l.MeanText(), l.FoldTexts(true)
			mark := ""
			if l.ID == st.Chosen {
				mark = " **(chosen)**"
			}
			fmt.Fprintf(&b, "| %s%s | %s | %d | %s | %s |\n", l.ID, mark, l.Plugin, n, mean, strings.Join(per, "; "))
		}
		b.WriteString("\n")
		if l := st.lane(st.Chosen); l != nil {
			b.WriteString(foldIntervals(l))
			b.WriteString(classAUROCs(l))
		}
	}
	if len(st.Rounds) > 0 {
		b.WriteString("## Rounds of successive halving (fold 0)\n\n")
		for i, rd := range st.Rounds {
			fmt.Fprintf(&b, "%d. at %v:", i+1, rd.Spent.Round(time.Second))
			if len(rd.Jobs) > 0 {
				fmt.Fprintf(&b, " trained %s.", strings.Join(rd.Jobs, "; "))
			}
			if len(rd.Stopped) > 0 {
				fmt.Fprintf(&b, " Stopped: %s.", strings.Join(rd.Stopped, "; "))
			}
			b.WriteString("\n")
		}
		b.WriteString("\n### Validation curves\n\n| lane | min steps | step time | curve (step: score) | stopped |\n|---|---:|---:|---|---|\n")
		for _, l := range st.Lanes {
			var pts []string
			for _, p := range l.Schedule.Curve {
				if p.Undefined {
					pts = append(pts, fmt.Sprintf("%d: undefined", p.Step))
					continue
				}
				pts = append(pts, fmt.Sprintf("%d: %.4f", p.Step, p.Score))
			}
			fmt.Fprintf(&b, "| %s | %d | %.3g s | %s | %s |\n", l.ID, l.Schedule.MinSteps, l.Schedule.StepSeconds, strings.Join(pts, ", "), l.Schedule.Stopped)
		}
		b.WriteString("\n")
	}
	if fm := st.Final; fm != nil {
		b.WriteString("## Final model\n\n")
		fmt.Fprintf(&b, "- Mode: %s, from lane %s\n- Rule: %s\n- How it applied: %s\n", fm.Mode, fm.Lane, fm.Rule, fm.Why)
		if fm.Checkpoint != "" {
			fmt.Fprintf(&b, "- Trained on every training case from step %d to step %d (planned %d) in %v\n", fm.FromStep, fm.Steps, fm.Until, fm.Took.Round(time.Second))
		}
		if fm.OutOfFold != 0 {
			fmt.Fprintf(&b, "- Out-of-fold validation of the ensemble: %.4f\n", fm.OutOfFold)
		}
		if fm.Error != "" {
			fmt.Fprintf(&b, "- Not made: %s\n", oneLine(fm.Error))
		}
		b.WriteString("\n")
	}
	if len(st.Why) > 0 {
		b.WriteString("## Choice\n\n")
		for _, w := range st.Why {
			fmt.Fprintf(&b, "- %s\n", w)
		}
		b.WriteString("\n")
	}
	if !st.Compute.IsZero() {
		fmt.Fprintf(&b, "Test predictions computed with %s.\n\n", st.Compute)
	}
	if g := st.TestScore; g != nil {
		b.WriteString("## Test set (the challenge's grader)\n\n")
		if g.Valid {
			ci := ""
			if lo, hi, ok := evaluate.Interval(g.Metrics); ok {
				ci = fmt.Sprintf(" (%.4f – %.4f: %s)", lo, hi, evaluate.IntervalMethod)
			}
			fmt.Fprintf(&b, "Valid submission: %s = %.4f%s, leaderboard percentile %.3f.\n\n", g.Primary, g.Score, ci, g.Percentile)
		} else {
			fmt.Fprintf(&b, "Invalid submission: %s\n\n", strings.Join(g.Errors, "; "))
		}
	}
	b.WriteString(st.From.text())
	if len(st.Notes) > 0 {
		b.WriteString("## Notes\n\n")
		for _, n := range st.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
		b.WriteString("\n")
	}
	if st.Package != "" {
		fmt.Fprintf(&b, "Package: %s\n", st.Package)
	}
	return b.String()
}

// foldIntervals is a line giving each validated fold's interval of the chosen lane's
// primary metric where it is not a mean over cases (a clinical metric: AUROC, kappa,
// Brier), with the fold's operating point where the metric has one; "" for other metrics.
func foldIntervals(l *LaneState) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(l.Folds)) {
		f := l.Folds[k]
		lo, hi, ok := evaluate.Interval(f.Extra)
		if f.Status != FoldDone || f.Undefined != "" || !ok {
			continue
		}
		p := fmt.Sprintf("fold %d %.4f (%.4f – %.4f)", k, f.Score, lo, hi)
		th := evaluate.Thresholds(f.Extra)
		for _, a := range slices.Sorted(maps.Keys(th)) {
			p += fmt.Sprintf(", threshold %s %.4g", a, th[a])
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("Validation of %s with intervals (%s; a metric better lower is negated): %s.\n\n", l.ID, evaluate.IntervalMethod, strings.Join(parts, "; "))
}

// classAUROCs is a line giving, per validated fold of the chosen lane, each class's
// one-vs-rest AUROC or each finding's AUROC of a multi-label task (the score's
// "auroc_<name>"), with "none" where a fold has no AUROC for it (no positive or no
// negative among its cases: left out of that fold's mean); "" where the folds keep none.
func classAUROCs(l *LaneState) string {
	var folds []int
	names := map[string]bool{}
	for _, k := range slices.Sorted(maps.Keys(l.Folds)) {
		f := l.Folds[k]
		if f.Status != FoldDone || f.Undefined != "" {
			continue
		}
		folds = append(folds, k)
		for name := range f.Extra {
			if n, ok := strings.CutPrefix(name, "auroc_"); ok {
				names[n] = true
			}
		}
	}
	if len(names) == 0 {
		return ""
	}
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(names)) {
		var per []string
		for _, k := range folds {
			if v, ok := l.Folds[k].Extra["auroc_"+n]; ok {
				per = append(per, fmt.Sprintf("fold %d %.4f", k, v))
			} else {
				per = append(per, fmt.Sprintf("fold %d none", k))
			}
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", n, strings.Join(per, ", ")))
	}
	return fmt.Sprintf("AUROC of each class or finding of %s (none: the fold has no positive or no negative of it, and its mean leaves it out): %s.\n\n", l.ID, strings.Join(parts, "; "))
}

// upperFirst is s with its first letter upper-case.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}
