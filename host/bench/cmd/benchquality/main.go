// Command benchquality is make bench-quality: AMID's loop on real labelled images at fixed
// budgets, the old schedule against the new one, beside the shortcuts a careless model
// could hide behind.
//
// It writes its tasks as task.yaml folders from real scans and their label maps
// (tasks.go): the ITK examples' T1 brain MR with a multi-class task (five tissue classes)
// and a binary one (the brain mask), the tuning set the schedule was fitted on with a
// human T1 at 1 mm (AAL lobes); and the reporting set nothing is fitted on: the INIA19
// macaque T1 at 0.5 mm with NeuroMaps regions merged by position, two ways, and a head CT
// at its native size (bone, a scale test). Each is cut into nine slabs, six to train and
// three to test. Beside them, one real-image reporting task of each other kind
// (families.go): structures boxed on INIA19 slices (detect.go, with a tuning twin that
// boxes AAL's deep grey nuclei on ch2 slices, for a detection learner to be fitted on),
// the Modality of the cache's DICOM files from their pixels (classify.go), a real CT at
// modelled doses scored by SSIM (iqa.go), and a real MR with a single scan's Rician noise
// to remove (enhance.go). For each it prints the
// shortcuts (shortcuts.go and the family's own); -shortcuts stops there; -smoke runs each
// chosen task once at a short budget, a check that it runs to a test score.
// It then runs the reporting tasks at 5 and 10 minutes (one also at 20), and the old loop (the commit
// named by -old, built from git into the work folder) at 20 minutes and the new one at 10
// minutes on the multi-class task with two seeds each, and the new one at 5 minutes on
// the binary task, each through the same driver (driver.go), and prints the test Dice,
// the share of the budget spent, the steps each lane made with its minimum, and the
// learning curves the minimum comes from (amid/host/schedule's curves.json). The old
// loop's results are kept under the work folder by commit, task, budget and seed, and not
// run again (-rerun-old runs them again).
//
// -record trains every lane the plugin plans for the multi-class task's first round in
// rounds on fold 0, scoring each round on the fold's validation slab, and writes the curves
// to host/schedule/curves.json (record.go).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"amid/host/schedule"
)

func main() {
	realdata := flag.String("realdata", os.Getenv("AMID_REALDATA"), "the real-image cache (.ci/realdata.sh)")
	work := flag.String("work", ".cache/bench-quality", "the work folder")
	old := flag.String("old", "ddf52c3", "the commit of the old loop")
	rerunOld := flag.Bool("rerun-old", false, "run the old loop again even when its results are kept")
	record := flag.Bool("record", false, "record learning curves into host/schedule/curves.json instead")
	only := flag.String("only", "", "run only these runs or the runs of these tasks (comma-separated names such as t1-tissue-new-10m-s1 or inia19-bands; empty: all)")
	shortcutsOnly := flag.Bool("shortcuts", false, "write the tasks and print their shortcuts only")
	smoke := flag.Duration("smoke", 0, "run each chosen task once at this budget instead (a check that its kind runs to a test score, not a measurement)")
	flag.Parse()
	if *realdata == "" {
		*realdata = ".cache/realdata"
	}
	o := options{realdata: *realdata, work: *work, old: *old, rerunOld: *rerunOld, record: *record, shortcutsOnly: *shortcutsOnly, only: *only, smoke: *smoke}
	if err := bench(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-quality:", err)
		os.Exit(1)
	}
}

// runSpec is one run of a loop on a task.
type runSpec struct {
	Task   string
	Loop   string // old or new
	Budget time.Duration
	Seed   int64
}

func (r runSpec) name() string {
	budget := r.Budget.String() // 5m0s is 5m, 1m30s stays
	if strings.HasSuffix(budget, "m0s") {
		budget = strings.TrimSuffix(budget, "0s")
	}
	return fmt.Sprintf("%s-%s-%s-s%d", r.Task, r.Loop, budget, r.Seed)
}

var runs = []runSpec{
	{"t1-tissue", "old", 20 * time.Minute, 1}, {"t1-tissue", "old", 20 * time.Minute, 2},
	{"t1-tissue", "new", 10 * time.Minute, 1}, {"t1-tissue", "new", 10 * time.Minute, 2},
	{"t1-brain", "new", 5 * time.Minute, 1},
	{"ch2-lobes", "new", 10 * time.Minute, 1},
	// The reporting tasks, which nothing was tuned on: each at 5 and 10 minutes, one
	// also at 20 (does the score hold as the budget grows?).
	{"inia19-quadrants", "new", 5 * time.Minute, 1}, {"inia19-quadrants", "new", 10 * time.Minute, 1}, {"inia19-quadrants", "new", 20 * time.Minute, 1},
	{"inia19-bands", "new", 5 * time.Minute, 1}, {"inia19-bands", "new", 10 * time.Minute, 1},
	{"ct-bone", "new", 5 * time.Minute, 1}, {"ct-bone", "new", 10 * time.Minute, 1},
	// Learning from corrections (improve.go), after the runs they start from and compare
	// with.
	{"inia19-quadrants", "improve", 5 * time.Minute, 1}, {"inia19-bands", "improve", 5 * time.Minute, 1},
}

// allRuns are runs and the family tasks' runs (families.go), each at 5 and 10 minutes:
// the tuning one (ch2-boxes) too, as its two budgets are what a detection learner's
// constants are fitted at.
func allRuns() []runSpec {
	out := slices.Clone(runs)
	for _, f := range families {
		out = append(out, runSpec{f.ID, "new", 5 * time.Minute, 1}, runSpec{f.ID, "new", 10 * time.Minute, 1})
	}
	return out
}

// chosen says whether run r is among only's runs or tasks (all when only is empty).
func chosen(r runSpec, only string) bool {
	return only == "" || strings.Contains(","+only+",", ","+r.name()+",") || strings.Contains(","+only+",", ","+r.Task+",")
}

// options are the command's flags.
type options struct {
	realdata, work, old             string
	rerunOld, record, shortcutsOnly bool
	only                            string
	smoke                           time.Duration
}

// smokeRuns is one run of the new loop at budget for each task of runs.
func smokeRuns(runs []runSpec, budget time.Duration) []runSpec {
	var out []runSpec
	for _, r := range runs {
		if r.Loop == "new" && !slices.ContainsFunc(out, func(s runSpec) bool { return s.Task == r.Task }) {
			out = append(out, runSpec{r.Task, "smoke", budget, r.Seed})
		}
	}
	return out
}

func bench(ctx context.Context, o options) error {
	realdata, old, rerunOld, record, shortcutsOnly, only := o.realdata, o.old, o.rerunOld, o.record, o.shortcutsOnly, o.only
	work, err := filepath.Abs(o.work)
	if err != nil {
		return err
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("bench-quality on %s; load average at the start: %s\n", time.Now().Format(time.RFC3339), strings.TrimSpace(string(load)))
	runs := allRuns()
	if o.smoke > 0 {
		runs = smokeRuns(runs, o.smoke)
	}
	if !shortcutsOnly && !record {
		var expected time.Duration
		for _, r := range runs {
			kept := r.Loop == "old" && !rerunOld
			if _, err := os.Stat(filepath.Join(work, "runs", "old-"+old, r.name(), "result.json")); !chosen(r, only) || (kept && err == nil) {
				continue
			}
			expected += r.Budget
		}
		fmt.Printf("expected duration: about %v of runs, plus building and the shortcuts\n", expected)
	}
	slabs := map[string][2][]slab{}
	for _, t := range tasks {
		if only != "" && !shortcutsOnly && !slices.ContainsFunc(runs, func(r runSpec) bool { return r.Task == t.ID && chosen(r, only) }) {
			continue
		}
		dir := filepath.Join(work, "tasks", t.ID)
		train, test, err := writeTask(realdata, dir, t)
		if err != nil {
			return fmt.Errorf("task %s: %w", t.ID, err)
		}
		slabs[t.ID] = [2][]slab{train, test}
		sc, err := shortcuts(ctx, dir, t, train, test)
		if err != nil {
			return fmt.Errorf("task %s: shortcuts: %w", t.ID, err)
		}
		set := "a " + setName(t.Set) + " task"
		if t.Scale {
			set += ", of scale: its labels are an intensity threshold, so it is kept out of the shortcut goal"
		}
		fmt.Printf("\n%s (%s; %s): %d training and %d test slabs; shortcuts on the test slabs (mean Dice over the foreground classes):\n", t.ID, t.Title, set, len(train), len(test))
		for _, s := range sc {
			fmt.Printf("  %-14s %.4f  %s\n", s.Name, s.Score, s.About)
		}
		if err := writeJSON(filepath.Join(work, "tasks", t.ID+".shortcuts.json"), sc); err != nil {
			return err
		}
	}
	for _, f := range families {
		if only != "" && !shortcutsOnly && !slices.ContainsFunc(runs, func(r runSpec) bool { return r.Task == f.ID && chosen(r, only) }) {
			continue
		}
		sc, err := writeFamily(ctx, realdata, filepath.Join(work, "tasks", f.ID), f)
		if err != nil {
			return fmt.Errorf("task %s: %w", f.ID, err)
		}
		fmt.Printf("\n%s (%s; a %s %s task; labels: %s): shortcuts on the test cases (the task's metric):\n", f.ID, f.Title, setName(f.set()), f.Kind, f.Labels)
		for _, s := range sc {
			fmt.Printf("  %-14s %.4f  %s\n", s.Name, s.Score, s.About)
		}
		if err := writeJSON(filepath.Join(work, "tasks", f.ID+".shortcuts.json"), sc); err != nil {
			return err
		}
	}
	if shortcutsOnly {
		return nil
	}
	newBin := filepath.Join(work, "bin", "new")
	if err := build(".", newBin); err != nil {
		return err
	}
	if record {
		return recordCurves(ctx, filepath.Join(work, "tasks", "t1-tissue"), newBin, filepath.Join(work, "record"))
	}
	oldBin := filepath.Join(work, "bin", "old-"+old)
	var results []result
	var improved []improveRow
	for _, r := range runs {
		if !chosen(r, only) {
			continue
		}
		if r.Loop == "improve" {
			row, err := improveOne(r, improves[r.name()], newBin, filepath.Join(work, "tasks", r.Task), filepath.Join(work, "runs"))
			if err != nil {
				return fmt.Errorf("%s: %w", r.name(), err)
			}
			improved = append(improved, row)
			fmt.Println(row.line())
			continue
		}
		bin, dir := newBin, filepath.Join(work, "runs", r.name())
		if r.Loop == "old" {
			bin, dir = oldBin, filepath.Join(work, "runs", "old-"+old, r.name())
			if _, err := os.Stat(filepath.Join(oldBin, "driver")); err != nil {
				if err := buildOld(old, oldBin); err != nil {
					return err
				}
			}
		}
		res, err := runOne(r, bin, filepath.Join(work, "tasks", r.Task), dir, r.Loop == "old" && !rerunOld)
		if err != nil {
			return fmt.Errorf("%s: %w", r.name(), err)
		}
		if f, ok := familyOf(r.Task); ok && !res.Recalled {
			if res.Also, err = alsoScores(ctx, f, filepath.Join(work, "tasks", r.Task), dir); err != nil {
				return fmt.Errorf("%s: %w", r.name(), err)
			}
		}
		results = append(results, res)
		fmt.Println(res.row())
	}
	fmt.Println()
	fmt.Println(table(results))
	if len(improved) > 0 {
		fmt.Println(improveTable(improved))
		if err := writeJSON(filepath.Join(work, "improve.json"), improved); err != nil {
			return err
		}
	}
	if c, err := schedule.Recorded(); err == nil {
		fmt.Printf("\nThe learning curves behind the minimum step count (host/schedule/curves.json, %s):\n", c.Recorded)
		for _, row := range c.Table() {
			fmt.Println("  " + row)
		}
		for _, lane := range []string{"2d", "2.5d", "3d_fullres", "3d_lowres"} {
			_, why := c.MinSteps("segmentation", lane)
			fmt.Printf("  minimum of %s: %s\n", lane, why)
		}
	}
	load, _ = os.ReadFile("/proc/loadavg")
	fmt.Printf("\nload average at the end: %s\n", strings.TrimSpace(string(load)))
	return writeJSON(filepath.Join(work, "results.json"), results)
}

// build builds the segmentation plugin and the driver of the tree at src into bin.
func build(src, bin string) error {
	if err := os.MkdirAll(filepath.Join(src, ".cache", "benchdriver"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, ".cache", "benchdriver", "main.go"), []byte(driverSource), 0o644); err != nil {
		return err
	}
	cmds := [][]string{
		{"go", "build", "-o", filepath.Join(bin, "plugins", "amid-plugin-segmentation"), "./plugins/segmentation"},
		{"go", "build", "-o", filepath.Join(bin, "driver"), "./.cache/benchdriver"},
	}
	if src == "." { // this tree: the other kinds' plugins (families.go) and the improve runs' driver too
		for _, k := range []string{"detection", "classification", "iqa", "enhancement"} {
			cmds = append(cmds, []string{"go", "build", "-o", filepath.Join(bin, "plugins", "amid-plugin-"+k), "./plugins/" + k})
		}
		if err := os.MkdirAll(filepath.Join(src, ".cache", "benchimprove"), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(src, ".cache", "benchimprove", "main.go"), []byte(improveSource), 0o644); err != nil {
			return err
		}
		cmds = append(cmds, []string{"go", "build", "-o", filepath.Join(bin, "improve"), "./.cache/benchimprove"})
	}
	for _, c := range cmds {
		cmd := exec.Command(c[0], c[1:]...)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s in %s: %w\n%s", strings.Join(c, " "), src, err, out)
		}
	}
	return nil
}

// buildOld extracts the tree of commit from git and builds it into bin.
func buildOld(commit, bin string) error {
	src := bin + ".src"
	if err := os.RemoveAll(src); err != nil {
		return err
	}
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	cmd := exec.Command("sh", "-c", "git archive "+commit+" | tar -x -C "+src)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git archive %s: %w\n%s", commit, err, out)
	}
	return build(src, bin)
}

// result is one run's outcome, from its run.json.
type result struct {
	Run    string        `json:"run"`
	Task   string        `json:"task"`
	Loop   string        `json:"loop"`
	Budget time.Duration `json:"budget"`
	Seed   int64         `json:"seed"`
	Test   float64       `json:"test_dice"` // the task's metric: Dice for segmentation
	Metric string        `json:"metric,omitempty"`
	// Also are the test predictions' scores with the task's other metrics (families.go).
	Also     map[string]float64 `json:"also,omitempty"`
	Spent    time.Duration      `json:"spent"`
	Chosen   string             `json:"chosen"`
	Final    string             `json:"final,omitempty"`
	Lanes    []laneResult       `json:"lanes"`
	Took     time.Duration      `json:"took"`
	Recalled bool               `json:"recalled,omitempty"` // kept from an earlier bench
}

type laneResult struct {
	ID       string  `json:"id"`
	Steps    int64   `json:"steps"`     // on fold 0
	AllSteps int64   `json:"all_steps"` // of the final model on all the data, when made
	MinSteps int     `json:"min_steps"`
	Score    float64 `json:"score"`
	Stopped  string  `json:"stopped,omitempty"`
}

// runOne runs r with the binaries in bin on the task folder into dir, or reads the result
// kept there when keep.
func runOne(r runSpec, bin, task, dir string, keep bool) (result, error) {
	if keep {
		var res result
		if b, err := os.ReadFile(filepath.Join(dir, "result.json")); err == nil && json.Unmarshal(b, &res) == nil {
			res.Recalled = true
			return res, nil
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return result{}, err
	}
	if err := os.RemoveAll(dir + ".home"); err != nil {
		return result{}, err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return result{}, err
	}
	logf, err := os.Create(dir + ".log")
	if err != nil {
		return result{}, err
	}
	defer logf.Close()
	began := time.Now()
	cmd := exec.Command(filepath.Join(bin, "driver"), filepath.Join(bin, "plugins"), filepath.Join(task, "task.yaml"), filepath.Join(task, "answers"), dir, r.Budget.String(), fmt.Sprint(r.Seed))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Run(); err != nil {
		return result{}, fmt.Errorf("%w (log: %s)", err, logf.Name())
	}
	res, err := readResult(dir)
	if err != nil {
		return result{}, err
	}
	res.Run, res.Task, res.Loop, res.Seed, res.Took = r.name(), r.Task, r.Loop, r.Seed, time.Since(began)
	return res, writeJSON(filepath.Join(dir, "result.json"), res)
}

// readResult reads what a run's run.json says, in the fields both loops write.
func readResult(dir string) (result, error) {
	var st struct {
		Budget    time.Duration `json:"budget"`
		Spent     time.Duration `json:"spent"`
		Chosen    string        `json:"chosen"`
		TestScore *struct {
			Primary string  `json:"primary"`
			Score   float64 `json:"score"`
		} `json:"test_score"`
		Lanes []struct {
			ID    string `json:"id"`
			Folds map[string]struct {
				Status string  `json:"status"`
				Steps  int64   `json:"steps"`
				Score  float64 `json:"score"`
			} `json:"folds"`
			Schedule *schedule.Lane `json:"schedule"`
		} `json:"lanes"`
		Final *struct {
			Mode  string `json:"mode"`
			Lane  string `json:"lane"`
			Steps int64  `json:"steps"`
		} `json:"final"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		return result{}, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return result{}, err
	}
	res := result{Budget: st.Budget, Spent: st.Spent, Chosen: st.Chosen}
	if st.TestScore == nil {
		return res, fmt.Errorf("%s: no test score", dir)
	}
	res.Test, res.Metric = st.TestScore.Score, st.TestScore.Primary
	if st.Final != nil {
		res.Final = st.Final.Mode
	}
	for _, l := range st.Lanes {
		lr := laneResult{ID: l.ID, Steps: l.Folds["0"].Steps, Score: l.Folds["0"].Score}
		if l.Schedule != nil {
			lr.MinSteps, lr.Stopped = l.Schedule.MinSteps, l.Schedule.Stopped
		}
		if st.Final != nil && st.Final.Lane == l.ID {
			lr.AllSteps = st.Final.Steps
		}
		res.Lanes = append(res.Lanes, lr)
	}
	return res, nil
}

// lanes says the steps each lane made on fold 0, its minimum, and the final model's.
func (r result) lanes() string {
	var out []string
	for _, l := range r.Lanes {
		s := fmt.Sprintf("%s %d", strings.TrimPrefix(l.ID, "segmentation_"), l.Steps)
		if l.MinSteps > 0 {
			s += fmt.Sprintf(" (min %d)", l.MinSteps)
		}
		if l.AllSteps > 0 {
			s += fmt.Sprintf(" → %d on all data", l.AllSteps)
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

func (r result) row() string {
	kept := ""
	if r.Recalled {
		kept = " (kept from an earlier bench)"
	}
	return fmt.Sprintf("%-24s test %s, spent %5.1f%% of %v, chosen %s%s; steps: %s", r.Run, r.score(), 100*r.Spent.Seconds()/r.Budget.Seconds(), r.Budget, r.Chosen, kept, r.lanes())
}

// score is the test score with its metric's name (Dice for a result kept from before it
// was named), and the other metrics' scores after it.
func (r result) score() string {
	m := r.Metric
	if m == "" {
		m = "dice"
	}
	s := fmt.Sprintf("%s %.4f", m, r.Test)
	for _, k := range slices.Sorted(maps.Keys(r.Also)) {
		s += fmt.Sprintf(" (%s %.4f)", k, r.Also[k])
	}
	return s
}

// table is the results as the README's Markdown table.
func table(rs []result) string {
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Task < rs[j].Task })
	var b strings.Builder
	b.WriteString("| task | loop | budget | seed | test score | budget spent | final model | steps per lane on fold 0 (minimum) |\n|---|---|---:|---:|---:|---:|---|---|\n")
	for _, r := range rs {
		final := r.Final
		if final == "" {
			final = "fold model"
		}
		fmt.Fprintf(&b, "| %s | %s | %v | %d | %s | %.1f %% | %s | %s |\n", r.Task, r.Loop, r.Budget, r.Seed, r.score(), 100*r.Spent.Seconds()/r.Budget.Seconds(), final, r.lanes())
	}
	return b.String()
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
