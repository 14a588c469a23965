package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// An improve run measures learning from corrections (amid run --from): the run named by
// base (a new loop's run of the same task at the same budget) has its worst test cases,
// by test Dice, "corrected" with their true labels and the others approved; its reviewed
// package is exported, and the model improves from it in the same budget again. The table
// sets its test Dice on the test cases it did not train on beside the base model's and
// beside the control's (the new loop at twice the budget, without corrections), each the
// mean of the same cases' Dice.
type improveSpec struct {
	Base, Control string // run names
	Worst         int    // test cases corrected
}

// improves are the improve runs by run name.
var improves = map[string]improveSpec{
	"inia19-quadrants-improve-5m-s1": {Base: "inia19-quadrants-new-5m-s1", Control: "inia19-quadrants-new-10m-s1", Worst: 1},
	"inia19-bands-improve-5m-s1":     {Base: "inia19-bands-new-5m-s1", Control: "inia19-bands-new-10m-s1", Worst: 1},
}

// improveSource is the improve runs' driver, built in this tree alone (the old loop has no
// run --from).
const improveSource = `package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"amid/host/catalog"
	"amid/host/export"
	"amid/host/run"
	"amid/host/store"
	"amid/host/supervisor"
	"amid/host/task"
	"amid/viewer/imageio"
)

// usage: improve PLUGINS TASK.yaml ANSWERS BASE RUNDIR BUDGET WORST
func main() {
	a := os.Args[1:]
	budget, err := time.ParseDuration(a[5])
	if err != nil {
		fail(err)
	}
	worst, err := strconv.Atoi(a[6])
	if err != nil {
		fail(err)
	}
	env, done := runEnv(a[0], a[4]+".home")
	defer done()
	t, err := task.Load(a[1])
	if err != nil {
		fail(err)
	}
	base, err := run.LoadState(a[3])
	if err != nil {
		fail(err)
	}
	if base.TestScore == nil {
		fail(fmt.Errorf("%s has no test score", a[3]))
	}
	var ids []string
	for id := range base.TestScore.PerCase {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return base.TestScore.PerCase[ids[i]] < base.TestScore.PerCase[ids[j]] })
	for k, id := range ids {
		d := export.Decision{Case: id, Decision: export.Approved, Reviewer: "bench-quality"}
		if k < worst {
			truth, err := imageio.Read(task.Expand(a[2], filepath.Base(t.Data.Train.Label.Path), id))
			if err != nil {
				fail(err)
			}
			if d.Correction, err = export.SaveCorrection(a[3], id, truth); err != nil {
				fail(err)
			}
			d.Decision, d.Note = export.Corrected, "its true labels"
			fmt.Printf("corrected %s (test Dice %.4f) with its true labels\n", id, base.TestScore.PerCase[id])
		}
		if err := run.Review(a[3], d); err != nil {
			fail(err)
		}
	}
	pkg := a[4] + ".package"
	os.RemoveAll(pkg)
	os.Remove(pkg + ".zip")
	if _, err := run.ExportTo(context.Background(), a[3], pkg, "", env); err != nil {
		fail(err)
	}
	r, err := run.New(run.Options{Task: a[1], Answers: a[2], Dir: a[4], Budget: budget, Seed: base.Seed, From: pkg}, env)
	if err != nil {
		fail(err)
	}
	if err := r.Run(context.Background()); err != nil {
		fail(err)
	}
}

` + driverCommon

// improveRow is an improve run's line of the table.
type improveRow struct {
	Run        string   `json:"run"`
	Untouched  []string `json:"untouched"`
	Corrected  []string `json:"corrected"`
	Base       float64  `json:"base"`
	Improved   float64  `json:"improved"`
	Control    float64  `json:"control"`
	ImprovedOn float64  `json:"improved_spent_fraction"`
}

// improveOne runs improve run r from its base run's folder (which it reviews: a copy is
// made first, so the base run stays as it was) and compares the three models.
func improveOne(r runSpec, spec improveSpec, bin, task, runs string) (improveRow, error) {
	row := improveRow{Run: r.name()}
	base, control := filepath.Join(runs, spec.Base), filepath.Join(runs, spec.Control)
	dir := filepath.Join(runs, r.name())
	reviewed := dir + ".base"
	for _, p := range []string{dir, dir + ".home", dir + ".package", dir + ".package.zip", reviewed} {
		if err := os.RemoveAll(p); err != nil {
			return row, err
		}
	}
	if out, err := exec.Command("cp", "-a", base, reviewed).CombinedOutput(); err != nil {
		return row, fmt.Errorf("copy %s: %w\n%s", base, err, out)
	}
	logf, err := os.Create(dir + ".log")
	if err != nil {
		return row, err
	}
	defer logf.Close()
	cmd := exec.Command(filepath.Join(bin, "improve"), filepath.Join(bin, "plugins"), filepath.Join(task, "task.yaml"), filepath.Join(task, "answers"),
		reviewed, dir, r.Budget.String(), fmt.Sprint(spec.Worst))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Run(); err != nil {
		return row, fmt.Errorf("%w (log: %s)", err, logf.Name())
	}
	read := func(d string) (map[string]float64, time.Duration, time.Duration, error) {
		var st struct {
			Budget    time.Duration `json:"budget"`
			Spent     time.Duration `json:"spent"`
			TestScore *struct {
				PerCase map[string]float64 `json:"per_case"`
			} `json:"test_score"`
		}
		b, err := os.ReadFile(filepath.Join(d, "run.json"))
		if err == nil {
			err = json.Unmarshal(b, &st)
		}
		if err == nil && st.TestScore == nil {
			err = fmt.Errorf("%s has no test score", d)
		}
		if err != nil {
			return nil, 0, 0, err
		}
		return st.TestScore.PerCase, st.Spent, st.Budget, nil
	}
	now, spent, budget, err := read(dir)
	if err != nil {
		return row, err
	}
	was, _, _, err := read(base)
	if err != nil {
		return row, err
	}
	ctl, _, _, err := read(control)
	if err != nil {
		return row, err
	}
	for id := range was {
		if _, ok := now[id]; ok {
			row.Untouched = append(row.Untouched, id)
		} else {
			row.Corrected = append(row.Corrected, id)
		}
	}
	slices.Sort(row.Untouched)
	slices.Sort(row.Corrected)
	mean := func(m map[string]float64) float64 {
		s := 0.0
		for _, id := range row.Untouched {
			s += m[id]
		}
		return s / float64(max(len(row.Untouched), 1))
	}
	row.Base, row.Improved, row.Control = mean(was), mean(now), mean(ctl)
	row.ImprovedOn = spent.Seconds() / budget.Seconds()
	return row, nil
}

func (r improveRow) line() string {
	return fmt.Sprintf("%-30s on the untouched test slabs %s (corrected: %s): base %.4f, improved %.4f (spent %.1f %%), control at twice the budget %.4f",
		r.Run, strings.Join(r.Untouched, ", "), strings.Join(r.Corrected, ", "), r.Base, r.Improved, 100*r.ImprovedOn, r.Control)
}

// improveTable is the improve rows as the README's Markdown table.
func improveTable(rows []improveRow) string {
	var b strings.Builder
	b.WriteString("| improve run | corrected test slabs | untouched test slabs | base model | improved from its package (same budget again) | control (twice the budget, no corrections) |\n|---|---|---|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %.4f | %.4f | %.4f |\n", r.Run, strings.Join(r.Corrected, ", "), strings.Join(r.Untouched, ", "), r.Base, r.Improved, r.Control)
	}
	return b.String()
}
