// Package bench runs ReX-MLE challenges end to end and tabulates the scores beside the
// published ones: for each challenge, the built-in task definition (amid/assets), data
// (the real prepared folder when given, else a generated one from amid/host/synth/rexmle),
// a full run (amid/host/run) within a budget, and the challenge's own grader on the
// private answers.
//
// Each row compares like with like: our score on the leaderboard column the published
// figures are (Published.Column), with the grader's primary metric beside it where that is
// another column (TopCoW detection: the published IoU is the iou column, the primary
// boundary_iou), and the columns the ReX grader ranks by (RankedBy: the mean of the
// submission's positions over all of them, rexmle.md §3).
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
	"sync"
	"text/tabwriter"
	"time"

	"amid/assets"
	"amid/host/grade"
	"amid/host/run"
	"amid/host/synth/rexmle"
	"amid/plugins/sdk"
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
	// Parallel is how many challenges run at once (0 or 1: one at a time, as the
	// scoreboard's times are compared). The end-to-end test runs two: a 10-second run on
	// tiny data keeps about half of the 2-core machine busy (TestEveryChallenge: 224 s of
	// CPU in 202 s).
	Parallel int
}

// Row is one challenge's result.
type Row struct {
	ID string `json:"id"`
	// Metric and Score are the column compared with the published figures and our score on
	// it; Primary and PrimaryScore the grader's primary metric, which the lanes optimise.
	Metric       string  `json:"metric"`
	Score        float64 `json:"score"`
	Primary      string  `json:"primary"`
	PrimaryScore float64 `json:"primary_score"`
	// RankedBy are the leaderboard columns whose mean position ranks a submission.
	RankedBy   []string      `json:"ranked_by,omitempty"`
	Valid      bool          `json:"valid"`
	Percentile float64       `json:"percentile"`
	Took       time.Duration `json:"took_ns"`
	Generated  bool          `json:"generated"`
	Error      string        `json:"error,omitempty"`
	Published  *Published    `json:"published,omitempty"`
	Chosen     string        `json:"chosen_lane,omitempty"`

	metrics map[string]float64 // every metric the grader computed
}

// Run runs the challenges, opt.Parallel at once, and returns their rows in the order
// asked; a challenge that fails is a row with its error, and the next one runs. progress
// sees each row as it ends, one call at a time. Once ctx is done no challenge starts, and
// Run returns the rows of those that ended with ctx's error.
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
	rows := make([]*Row, len(ids))
	var mu sync.Mutex
	_, err := sdk.EachWith(ctx, len(ids), opt.Parallel, func(i int) error {
		row := one(ctx, ids[i], opt, env)
		compare(&row)
		mu.Lock()
		defer mu.Unlock()
		rows[i] = &row
		if progress != nil {
			progress(row)
		}
		return nil
	})
	var done []Row
	for _, r := range rows {
		if r != nil {
			done = append(done, *r)
		}
	}
	return done, err
}

// compare puts the published figures in row, with our score on their column, and the
// columns the ReX grader ranks by.
func compare(row *Row) {
	if p, ok := PublishedScores(row.ID); ok {
		row.Published = &p
		if v, ok := row.metrics[p.Column]; ok {
			row.Metric, row.Score = p.Column, v
		} else if row.Metric == "" {
			row.Metric = p.Column
		}
	}
	if lb, err := grade.LoadLeaderboard(row.ID); err == nil {
		row.RankedBy = lb.Metrics
	}
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
		row.Primary, row.PrimaryScore, row.Valid, row.Percentile, row.metrics = g.Primary, g.Score, g.Valid, g.Percentile, g.Metrics
		row.Metric, row.Score = g.Primary, g.Score // until Run finds the published column
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\t%v\t%s\t%s\n", r.ID, r.Metric, score, r.Valid, pct, r.Took.Round(time.Second), pub, strings.ReplaceAll(note(r), "\t", " "))
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

// note is a row's last column: the grader's primary metric where the published figures are
// another column, what the ReX grader ranks by where it ranks by more than one column, and
// the error that ended the run.
func note(r Row) string {
	var parts []string
	if r.Primary != "" && r.Primary != r.Metric {
		if r.Valid {
			parts = append(parts, fmt.Sprintf("primary %s %.4f", r.Primary, r.PrimaryScore))
		} else {
			parts = append(parts, "primary "+r.Primary)
		}
	}
	switch n := len(r.RankedBy); {
	case n > 4:
		parts = append(parts, fmt.Sprintf("ranked by the mean position over %d columns", n))
	case n > 1:
		parts = append(parts, "ranked by the mean position over "+strings.Join(r.RankedBy, ", "))
	}
	if e := r.Error; e != "" {
		if len(e) > 60 {
			e = e[:57] + "..."
		}
		parts = append(parts, e)
	}
	return strings.Join(parts, "; ")
}

// JSON writes rows as JSON.
func JSON(w io.Writer, rows []Row) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rows)
}
