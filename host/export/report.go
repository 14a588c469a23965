package export

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Report is the solution report's text (report.md). Each field is Markdown written by the
// run (the planner's rationale, the plugin's description, the verifier's findings); an
// empty one is rendered as "Not recorded.". The internal-validation table is rendered
// from the package's Scores.
type Report struct {
	Title          string // e.g. the challenge's name; the task ID when empty
	Challenge      string // the task: data, target, what a prediction is
	Evaluation     string // the metric and how the host computes it
	Method         string
	Architecture   string
	Training       string
	Inference      string
	PostProcessing string
	Result         string // the chosen candidate's result, on validation and, if known, test
	// Data says what the package holds of the data (DICOM SEG predictions, whether
	// they reference the archive's originals or de-identified UIDs); empty: no section.
	Data string
	// Chosen is the chosen candidate's lane ID; Candidates say why each won or lost.
	Chosen     string
	Candidates []Candidate
}

// Candidate is one lane considered for the package.
type Candidate struct {
	Lane    string
	Plugin  string
	Summary string // what the lane is, in one line
	Why     string // why it won (the chosen one) or lost
}

// RenderReport renders report.md for a package with manifest m (whose Files may still be
// empty), text r and scores s.
func RenderReport(m *Manifest, r Report, s Scores) string {
	var b strings.Builder
	title := r.Title
	if title == "" {
		title = m.TaskID
	}
	fmt.Fprintf(&b, "# Solution report: %s\n\n", oneLine(title))
	fmt.Fprintf(&b, "Task `%s`, exported %s by AMID %s with plugin %s %s",
		m.TaskID, m.Created.Format("2006-01-02 15:04:05 UTC"), m.AMIDVersion, m.Plugin.Name, m.Plugin.Version)
	if m.EngineVersion != "" {
		fmt.Fprintf(&b, " (engine %s)", m.EngineVersion)
	}
	if m.Lane != "" {
		fmt.Fprintf(&b, ", lane `%s`", m.Lane)
	}
	b.WriteString(".\n\n")

	section := func(h, text string) {
		fmt.Fprintf(&b, "## %s\n\n", h)
		text = strings.TrimSpace(text)
		if text == "" {
			text = "Not recorded."
		}
		b.WriteString(text + "\n\n")
	}
	section("Challenge and evaluation", strings.TrimSpace(r.Challenge+"\n\n"+r.Evaluation))
	section("Method", r.Method)
	section("Architecture", r.Architecture)
	section("Training", r.Training)
	section("Inference", r.Inference)
	section("Post-processing", r.PostProcessing)
	if strings.TrimSpace(r.Data) != "" {
		section("Data and privacy", r.Data)
	}

	b.WriteString("## Internal validation\n\n")
	b.WriteString(validationTable(s, r.Chosen))
	section("Result", r.Result)

	b.WriteString("## Why this candidate\n\n")
	var chosen *Candidate
	var others []Candidate
	for i := range r.Candidates {
		if r.Candidates[i].Lane == r.Chosen && chosen == nil {
			chosen = &r.Candidates[i]
		} else {
			others = append(others, r.Candidates[i])
		}
	}
	if chosen == nil {
		b.WriteString("Not recorded.\n\n")
	} else {
		fmt.Fprintf(&b, "Chosen: %s.\n\n%s\n\n", candidate(*chosen), strings.TrimSpace(orNot(chosen.Why)))
	}
	if len(others) > 0 {
		b.WriteString("Other candidates:\n\n")
		for _, c := range others {
			fmt.Fprintf(&b, "- %s: %s\n", candidate(c), oneLine(orNot(c.Why)))
		}
		b.WriteString("\n")
	}

	b.WriteString("## Reproducing\n\n")
	b.WriteString(computeText(m))
	b.WriteString("`./reproduce.sh OUT_DIR` re-runs prediction with the bundled plugin binary (`" + m.Plugin.Binary +
		"`) and the weights under `model/` into `OUT_DIR/predictions` (it calls `amid reproduce PACKAGE_DIR OUT_DIR`). " +
		"`amid verify PACKAGE` checks every file against `manifest.json`, the audit chain in `audit.jsonl`, " +
		"and that a re-run reproduces the files under `predictions/`: byte for byte under the same compute identity, " +
		"within the tolerance table of `amid/plugins/compute` under another (another CPU's kernels, a GPU), " +
		"and it says which.\n")
	return b.String()
}

// computeText names what computed the predictions and trained the weights.
func computeText(m *Manifest) string {
	if m.Compute.IsZero() {
		return "The plugin did not report what computed the predictions: only a byte-identical re-run verifies them.\n\n"
	}
	s := fmt.Sprintf("The predictions were computed with %s (engine version, device, BLAS and its kernels, worker split).", m.Compute)
	for _, t := range m.Trained {
		s += fmt.Sprintf(" The weights were trained with %s.", t)
	}
	return s + "\n\n"
}

// candidate is "`lane` (plugin), summary".
func candidate(c Candidate) string {
	s := "`" + c.Lane + "`"
	if c.Plugin != "" {
		s += " (" + c.Plugin + ")"
	}
	if sum := strings.TrimSuffix(oneLine(c.Summary), "."); sum != "" {
		s += ", " + sum
	}
	return s
}

func orNot(s string) string {
	if strings.TrimSpace(s) == "" {
		return "Not recorded."
	}
	return s
}

// validationTable is a Markdown table: a row per lane, a column per fold and the mean.
func validationTable(s Scores, chosen string) string {
	if len(s.Lanes) == 0 {
		return "No validation scores recorded.\n\n"
	}
	folds := map[int]bool{}
	for _, l := range s.Lanes {
		for _, f := range l.Folds {
			folds[f.Fold] = true
		}
	}
	order := make([]int, 0, len(folds))
	for f := range folds {
		order = append(order, f)
	}
	sort.Ints(order)
	var b strings.Builder
	dir := "lower is better"
	if s.HigherIsBetter {
		dir = "higher is better"
	}
	fmt.Fprintf(&b, "Metric: %s (%s), per validation fold.\n\n", cell(orDash(s.Metric)), dir)
	b.WriteString("| lane | plugin | status |")
	for _, f := range order {
		fmt.Fprintf(&b, " fold %d |", f)
	}
	b.WriteString(" mean |\n|---|---|---|")
	for range order {
		b.WriteString("---:|")
	}
	b.WriteString("---:|\n")
	for _, l := range s.Lanes {
		name := "`" + cell(l.Lane) + "`"
		if l.Lane == chosen {
			name = "**" + name + "** (chosen)"
		}
		status := orDash(l.Status)
		if l.Reason != "" {
			status += ": " + l.Reason
		}
		fmt.Fprintf(&b, "| %s | %s | %s |", name, cell(orDash(l.Plugin)), cell(status))
		byFold := map[int]float64{}
		for _, f := range l.Folds {
			byFold[f.Fold] = f.Score
		}
		for _, f := range order {
			if v, ok := byFold[f]; ok {
				fmt.Fprintf(&b, " %s |", num(v))
			} else {
				b.WriteString(" – |")
			}
		}
		fmt.Fprintf(&b, " %s |\n", num(l.Mean()))
	}
	b.WriteString("\n")
	return b.String()
}

func num(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', 4, 64)
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// cell makes s safe inside a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(oneLine(s), "|", `\|`) }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
