// Package bench runs ReX-MLE challenges end to end and tabulates the scores beside the
// published ones: for each challenge, the built-in task definition (amid/assets), data
// (the real prepared folder when given, else a generated one from amid/host/synth/rexmle),
// a full run (amid/host/run) within a budget, and the challenge's own grader on the
// private answers.
//
// Scores on generated data are not comparable with the published ones: the images only
// resemble the modality, the cases are few and small, and the budget is minutes on a CPU.
// The table says so. On real data the percentile against the challenge leaderboard is
// meaningful.
package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"amid/assets"
	"amid/host/run"
	"amid/host/synth/rexmle"
)

// Options configure a benchmark.
type Options struct {
	Tasks  []string      // challenge ids; empty: all 20
	Budget time.Duration // per challenge
	// Data is a folder of real prepared challenges, <id>/public and <id>/private (the
	// layout ReX-MLE's prepare writes); empty: generated data.
	Data  string
	Out   string // where data and runs are written
	Cases int    // generated cases per challenge (0: the generator's default)
	Seed  int64
	Folds int
}

// Row is one challenge's result.
type Row struct {
	ID         string        `json:"id"`
	Metric     string        `json:"metric"`
	Score      float64       `json:"score"`
	Valid      bool          `json:"valid"`
	Percentile float64       `json:"percentile"`
	Took       time.Duration `json:"took_ns"`
	Generated  bool          `json:"generated"`
	Error      string        `json:"error,omitempty"`
	Published  *Published    `json:"published,omitempty"`
	Chosen     string        `json:"chosen_lane,omitempty"`
}

// Run runs each challenge in turn; a challenge that fails is a row with its error, and the
// next one runs.
func Run(ctx context.Context, opt Options, env run.Env, progress func(Row)) ([]Row, error) {
	ids := opt.Tasks
	if len(ids) == 0 {
		ids = rexmle.IDs()
	}
	for _, id := range ids {
		if !slices.Contains(rexmle.IDs(), id) {
			return nil, fmt.Errorf("bench: %q is not a ReX-MLE challenge (known: %s)", id, strings.Join(rexmle.IDs(), ", "))
		}
	}
	var rows []Row
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return rows, err
		}
		row := one(ctx, id, opt, env)
		if p, ok := PublishedScores(id); ok {
			row.Published = &p
		}
		rows = append(rows, row)
		if progress != nil {
			progress(row)
		}
	}
	return rows, nil
}

func one(ctx context.Context, id string, opt Options, env run.Env) Row {
	row := Row{ID: id, Generated: opt.Data == ""}
	began := time.Now()
	fail := func(err error) Row {
		row.Error = err.Error()
		row.Took = time.Since(began)
		return row
	}
	yaml, err := assets.RexMLETask(id)
	if err != nil {
		return fail(err)
	}
	dir := filepath.Join(opt.Out, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(err)
	}
	taskPath := filepath.Join(dir, "task.yaml")
	if err := os.WriteFile(taskPath, yaml, 0o644); err != nil {
		return fail(err)
	}
	public, private := filepath.Join(opt.Data, id, "public"), filepath.Join(opt.Data, id, "private")
	if opt.Data == "" {
		data := filepath.Join(dir, "data")
		if err := os.RemoveAll(data); err != nil {
			return fail(err)
		}
		if err := rexmle.Generate(id, data, rexmle.Options{Cases: opt.Cases, Seed: opt.Seed}); err != nil {
			return fail(err)
		}
		public, private = filepath.Join(data, "public"), filepath.Join(data, "private")
	}
	runDir := filepath.Join(dir, "run")
	if err := os.RemoveAll(runDir); err != nil {
		return fail(err)
	}
	r, err := run.New(run.Options{Task: taskPath, Data: public, Dir: runDir, Budget: opt.Budget, Answers: private, Folds: opt.Folds, Seed: opt.Seed}, env)
	if err != nil {
		return fail(err)
	}
	err = r.Run(ctx)
	st := r.State()
	row.Chosen = st.Chosen
	if g := st.TestScore; g != nil {
		row.Metric, row.Score, row.Valid, row.Percentile = g.Primary, g.Score, g.Valid, g.Percentile
	}
	if err != nil {
		return fail(err)
	}
	row.Took = time.Since(began)
	return row
}

// Table writes rows as an aligned table with the published scores beside ours.
func Table(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "challenge\tmetric\tours\tvalid\tpercentile\ttime\tpublished AMID\tbest agent\thuman\tnote")
	generated := false
	for _, r := range rows {
		pub := "\t\t"
		if p := r.Published; p != nil {
			pub = fmt.Sprintf("%.2f\t%.2f (%s)\t%.2f", p.AMID, p.BestAgent, p.Agent, p.Human)
		}
		score, pct := fmt.Sprintf("%.4f", r.Score), fmt.Sprintf("%.0f%%", 100*r.Percentile)
		if r.Generated {
			pct = "n/a"
			generated = true
		}
		if !r.Valid {
			score = "—"
		}
		note := r.Error
		if len(note) > 60 {
			note = note[:57] + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\t%v\t%s\t%s\n", r.ID, r.Metric, score, r.Valid, pct, r.Took.Round(time.Second), pub, strings.ReplaceAll(note, "\t", " "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if generated {
		_, err := fmt.Fprintln(w, "\nScores on generated data are NOT comparable with the published ones: the data only resemble each challenge's images, the cases are few and small, and the budget is minutes on this machine's CPU. The percentile is given on real data only.")
		return err
	}
	return nil
}

// JSON writes rows as JSON.
func JSON(w io.Writer, rows []Row) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rows)
}
