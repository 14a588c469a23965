package slurm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"amid/host/audit/audittest"
	"amid/host/catalog"
	"amid/host/export"
	"amid/host/lanejob"
	"amid/host/planner"
	"amid/host/run"
	"amid/host/store"
	"amid/host/supervisor"
	"amid/host/synth"
	"amid/plugins/compute"
)

// The demo task on Slurm against the same run on this machine: lanes trained for fixed
// step counts (run.Options.Steps), so that two runs with the same seed train the same
// steps whatever their speed.

// demoSteps is the first round's steps (the second trains twice as many): enough for the
// lanes to score apart on the demo's head CTs, few enough for a test.
const demoSteps = 5

var (
	segOnce sync.Once
	segDir  string
	segErr  error
)

// segmentation builds the segmentation plugin once, as make builds it (with cgo, so that
// SGEMM runs on OpenBLAS), into a folder of built-in plugins.
func segmentation(t *testing.T) string {
	t.Helper()
	segOnce.Do(func() {
		segDir, segErr = os.MkdirTemp("", "amid-slurm-seg-")
		if segErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", filepath.Join(segDir, "amid-plugin-segmentation"), "../../plugins/segmentation").CombinedOutput()
		if err != nil {
			segErr = fmt.Errorf("build the segmentation plugin: %w\n%s", err, out)
		}
	})
	if segErr != nil {
		t.Fatal(segErr)
	}
	t.Cleanup(func() {}) // the folder goes with the test binary's temporary files
	return segDir
}

var (
	amidOnce sync.Once
	amidPath string
	amidErr  error
)

// amidProgram builds the amid program once, as make builds bin/amid (without cgo), for
// the demo's jobs to run as `amid lane exec SPEC`: the program a user's cluster runs, not
// this test binary.
func amidProgram(t *testing.T) string {
	t.Helper()
	amidOnce.Do(func() {
		dir, err := os.MkdirTemp("", "amid-slurm-amid-")
		if err != nil {
			amidErr = err
			return
		}
		amidPath = filepath.Join(dir, "amid")
		cmd := exec.Command("go", "build", "-o", amidPath, "../../app/cmd/amid")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			amidErr = fmt.Errorf("build the amid program: %w\n%s", err, out)
		}
	})
	if amidErr != nil {
		t.Fatal(amidErr)
	}
	return amidPath
}

// lanes plans those of the rules' lanes it names (by the plugin's candidate name) and
// adds none after the first round.
type lanes []string

func (ls lanes) Plan(ctx context.Context, in planner.Input) ([]planner.Lane, error) {
	if len(in.Results) > 0 {
		return nil, nil
	}
	// The rules' order, without the cut a short budget makes (which another ranked lane,
	// the forest, moves).
	all, err := planner.Rules{MaxLanes: 64}.Plan(ctx, in)
	var out []planner.Lane
	for _, l := range all {
		for _, n := range ls {
			if strings.HasSuffix(l.Name, "/"+n) {
				out = append(out, l)
			}
		}
	}
	return out, err
}

// threeLanes are the demo's quickest lanes: on two places, two rounds of halving.
var threeLanes = lanes{"2d", "2.5d", "3d_lowres"}

// demoRun is what a run of the demo needs: the task, the store's folder, the plugins.
type demoRun struct {
	Steps   int    `json:"steps"`
	Task    string `json:"task"`
	Home    string `json:"home"`
	Plugins string `json:"plugins"`
	Dir     string `json:"dir"`
	// Amid is the built amid program the jobs run.
	Amid string `json:"amid"`
}

// places are both runs' places: two of one worker each, the test cluster's two CPUs.
var places = []run.Place{{Name: "p0", Device: "cpu", Workers: 1}, {Name: "p1", Device: "cpu", Workers: 1}}

// env opens the store in d.Home, trusts the plugin and returns a run's environment whose
// executor is the local one on places, or Slurm's.
func (d demoRun) env(onSlurm bool) (run.Env, func(), error) {
	st, err := store.Open(filepath.Join(d.Home, "amid.db"), 5*time.Second)
	if err != nil {
		return run.Env{}, nil, err
	}
	c := &catalog.Catalog{Builtin: d.Plugins, Store: st}
	e, err := c.Find("segmentation")
	if err == nil && e.State != catalog.Trusted {
		err = c.Trust(e)
	}
	if err != nil {
		st.Close()
		return run.Env{}, nil, err
	}
	env := run.Env{Catalog: c, Supervisor: quiet(), NewExecutor: func(dir string, local *run.Local) (run.Executor, error) {
		if !onSlurm {
			local.Slots = places
			return local, nil
		}
		l, err := New(Options{Jobs: 2, CPUs: 1, Memory: 256 << 20, Program: d.Amid, Poll: time.Second})
		if err != nil {
			return nil, err
		}
		return &lanejob.Executor{Launcher: l, Local: local, Dir: dir, Poll: time.Second, Tail: 200 * time.Millisecond, EndWait: 5 * time.Second}, nil
	}}
	return env, func() { st.Close() }, nil
}

func (d demoRun) options() run.Options {
	// A budget the fixed steps overrun: the final model is the winner's fold model, and
	// no post-processing is tried, in both runs alike.
	return run.Options{Task: d.Task, Dir: d.Dir, Budget: 20 * time.Second, Folds: 3, Steps: d.Steps, Seed: 42, Planner: threeLanes, PlannerName: "three lanes"}
}

// demoHost is the host of the demo's run on Slurm, in a process of its own that the test
// kills outright.
func demoHost(path string) int {
	var d demoRun
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &d)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env, done, err := d.env(true)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer done()
	r, err := run.New(d.options(), env)
	if err == nil {
		err = r.Run(context.Background())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// jobFolders are the job folders of a run's lane-folds.
func jobFolders(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(filepath.Join(dir, "lanes"), func(p string, de fs.DirEntry, err error) error {
		if err == nil && de.IsDir() && de.Name() == lanejob.DirName {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// The demo task on Slurm: the host is killed outright while the lanes' jobs train, and
// the resumed run re-attaches to them rather than starting them again, so that no lane
// trains twice; it trains the same steps as the same run on this machine, scores every
// round the same, chooses the same lane, and its package verifies (amid verify: the
// checksums, the audit chain and a byte-for-byte re-run).
func TestDemoOnSlurm(t *testing.T) {
	needCluster(t)
	plugins := segmentation(t)
	data := t.TempDir()
	if err := synth.Demo(data, 6, 3); err != nil {
		t.Fatal(err)
	}
	base := demoRun{Steps: demoSteps, Task: filepath.Join(data, "task.yaml"), Home: t.TempDir(), Plugins: plugins, Amid: amidProgram(t)}

	// The same run on this machine.
	local := base
	local.Dir = filepath.Join(t.TempDir(), "local")
	env, done, err := local.env(false)
	if err != nil {
		t.Fatal(err)
	}
	here := &shown{}
	env.Events = here.add
	began := time.Now()
	r, err := run.New(local.options(), env)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatalf("the local run: %v", err)
	}
	done()
	ref := r.State()
	t.Logf("the local run chose %s in %v", ref.Chosen, time.Since(began).Round(time.Second))

	// On Slurm, with a host killed once both lanes' jobs have started.
	sl := base
	sl.Dir = filepath.Join(t.TempDir(), "slurm")
	spec := filepath.Join(t.TempDir(), "run.json")
	b, _ := json.Marshal(sl)
	if err := os.WriteFile(spec, b, 0o644); err != nil {
		t.Fatal(err)
	}
	began = time.Now()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envHost+"="+spec)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		started := 0
		for _, d := range jobFolders(t, sl.Dir) {
			evs, _ := lanejob.ReadEvents(filepath.Join(d, lanejob.EventsFile))
			for _, e := range evs {
				if e.Kind == lanejob.KindStart {
					started++
				}
			}
		}
		if started >= 2 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the lanes' jobs did not start within 3 minutes:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	st, err := run.LoadState(sl.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Phase != run.PhaseExplore {
		t.Fatalf("the host was killed in phase %s, want explore", st.Phase)
	}
	submitted := map[string]string{}
	for _, d := range jobFolders(t, sl.Dir) {
		submitted[d] = readRecord(t, d).Submissions[0].Job
	}

	env, done, err = sl.env(true)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	var log strings.Builder
	var mu sync.Mutex
	there := &shown{}
	env.Events = func(e run.Event) {
		there.add(e)
		mu.Lock()
		defer mu.Unlock()
		if e.Message != "" {
			fmt.Fprintf(&log, "%s %s %s\n", e.Phase, e.Lane, e.Message)
		}
	}
	r, err = run.Open(sl.Dir, threeLanes, env)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatalf("the resumed run on Slurm: %v\n%s", err, log.String())
	}
	got := r.State()
	t.Logf("the run on Slurm chose %s in %v", got.Chosen, time.Since(began).Round(time.Second))

	// Re-attached, not started again: every job folder holds the one job it was given,
	// which started once.
	reattached := strings.Count(log.String(), "re-attached to Slurm job")
	if reattached == 0 {
		t.Errorf("the resumed run re-attached to no job:\n%s", log.String())
	}
	for d, id := range submitted {
		rec := readRecord(t, d)
		starts := 0
		evs, _ := lanejob.ReadEvents(filepath.Join(d, lanejob.EventsFile))
		for _, e := range evs {
			if e.Kind == lanejob.KindStart {
				starts++
			}
		}
		if len(rec.Submissions) != 1 || rec.Submissions[0].Job != id || starts != 1 {
			t.Errorf("%s: submissions %+v (the killed host had submitted job %s), %d starts", d, rec.Submissions, id, starts)
		}
	}
	for _, d := range jobFolders(t, sl.Dir) {
		if rec := readRecord(t, d); len(rec.Submissions) != 1 {
			t.Errorf("%s: %d jobs for one lane-fold", d, len(rec.Submissions))
		}
	}

	// The same steps, scores and choice as on this machine.
	if got.Winner != ref.Winner || got.Chosen != ref.Chosen {
		t.Errorf("on Slurm: winner %s, chosen %s; on this machine: winner %s, chosen %s", got.Winner, got.Chosen, ref.Winner, ref.Chosen)
	}
	for _, want := range ref.Lanes {
		l := laneOf(got, want.ID)
		if l == nil {
			t.Errorf("lane %s is missing on Slurm", want.ID)
			continue
		}
		a, b := want.Folds[0].Rounds, l.Folds[0].Rounds
		if len(a) != len(b) {
			t.Errorf("lane %s: %d rounds here, %d on Slurm", want.ID, len(a), len(b))
			continue
		}
		for i := range a {
			t.Logf("lane %s round %d: %d steps, validation %.4f here and %.4f on Slurm", want.ID, i, a[i].Steps, a[i].Score, b[i].Score)
			if a[i].Steps != b[i].Steps || a[i].Score != b[i].Score || a[i].SHA256 != b[i].SHA256 {
				t.Errorf("lane %s round %d: here %d steps, score %v, checkpoint %s; on Slurm %d, %v, %s",
					want.ID, i, a[i].Steps, a[i].Score, a[i].SHA256, b[i].Steps, b[i].Score, b[i].SHA256)
			}
		}
	}

	// The Monitor and the CLI see a lane on Slurm as one here: the same training progress
	// (step and losses) for every step the resumed host followed from the start (the
	// second round's).
	for _, l := range ref.Lanes {
		a, b := here.steps(l.ID, demoSteps), there.steps(l.ID, demoSteps)
		if l.ID == ref.Winner && len(a) == 0 {
			t.Errorf("the winner %s showed no progress after step %d", l.ID, demoSteps)
		}
		if strings.Join(a, "; ") != strings.Join(b, "; ") {
			t.Errorf("lane %s's progress after step %d: here %q, on Slurm %q", l.ID, demoSteps, a, b)
		}
	}

	// amid verify.
	v, err := export.Verify(context.Background(), got.Package, export.VerifyOptions{Reproduce: func(ctx context.Context, pkg, out string) (compute.Identity, error) {
		return run.Reproduce(ctx, pkg, out, "", supervisor.Options{})
	}})
	if err != nil || !v.Reproduced || !v.Exact {
		t.Errorf("the package on Slurm does not verify: %v (%s); problems %q", err, v.ReproduceNote, v.Problems)
	}
}

// shown is the training progress a run's events carry, as the Monitor and the CLI show it.
type shown struct {
	mu sync.Mutex
	by map[string][]string // by lane: "step losses"
}

func (s *shown) add(e run.Event) {
	if e.Progress == nil || e.Progress.Losses == nil || e.Fold != 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.by == nil {
		s.by = map[string][]string{}
	}
	s.by[e.Lane] = append(s.by[e.Lane], fmt.Sprintf("step %d/%d %v", e.Progress.Step, e.Progress.TotalSteps, e.Progress.Losses))
}

// steps is lane's progress after step from.
func (s *shown) steps(lane string, from int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, p := range s.by[lane] {
		var n int
		if fmt.Sscanf(p, "step %d/", &n); n > from {
			out = append(out, p)
		}
	}
	return out
}

func readRecord(t *testing.T, dir string) *lanejob.Record {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, lanejob.RecordFile))
	if err != nil {
		t.Fatal(err)
	}
	var r lanejob.Record
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

func laneOf(st *run.State, id string) *run.LaneState {
	for _, l := range st.Lanes {
		if l.ID == id {
			return l
		}
	}
	return nil
}

// A job of a run cancelled from outside (scancel by someone else): its lane fails with
// Slurm's reason, in the run's record and its audit log, and the run goes on to the end
// with the other lanes.
func TestRunGoesOnAfterScancel(t *testing.T) {
	needCluster(t)
	plugins := segmentation(t)
	data := t.TempDir()
	if err := synth.Demo(data, 6, 3); err != nil {
		t.Fatal(err)
	}
	// Twenty steps: the 2.5D lane's job is still training when the test cancels it.
	d := demoRun{Steps: 20, Task: filepath.Join(data, "task.yaml"), Home: t.TempDir(), Plugins: plugins, Amid: amidProgram(t), Dir: filepath.Join(t.TempDir(), "run")}
	env, done, err := d.env(true)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	opts := d.options()
	opts.Planner = lanes{"2d", "2.5d"}
	r, err := run.New(opts, env)
	if err != nil {
		t.Fatal(err)
	}
	job := filepath.Join(d.Dir, "lanes", "segmentation_2.5d", "f0", "r0", lanejob.DirName)
	cancelled := make(chan string, 1)
	go func() {
		deadline := time.Now().Add(3 * time.Minute)
		for time.Now().Before(deadline) {
			evs, _ := lanejob.ReadEvents(filepath.Join(job, lanejob.EventsFile))
			for _, e := range evs {
				if e.Kind == lanejob.KindProgress {
					id := e.Job
					exec.Command("scancel", id).Run()
					cancelled <- id
					return
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		cancelled <- ""
	}()
	if err := r.Run(context.Background()); err != nil {
		t.Fatalf("the run: %v", err)
	}
	id := <-cancelled
	if id == "" {
		t.Fatal("the 2.5D lane's job never trained")
	}
	st := r.State()
	l := laneOf(st, "segmentation_2.5d")
	want := "Slurm job " + id + " was cancelled on amid1, not by AMID"
	if st.Phase != run.PhaseDone || st.Chosen != "segmentation_2d" || l.Folds[0].Error != want || l.Schedule.Stopped != "failed: "+want {
		t.Errorf("phase %s, chosen %s; the cancelled lane: error %q, stopped %q; want %q", st.Phase, st.Chosen, l.Folds[0].Error, l.Schedule.Stopped, want)
	}
	failed := false
	for _, e := range audittest.Entries(t, filepath.Join(d.Dir, "audit.db")) {
		failed = failed || e.Action == "lane.failed" && strings.Contains(string(e.Details), want)
	}
	if !failed {
		t.Error("the audit log does not record the lane's failure with Slurm's reason")
	}
}

// Cancel in the CLI (Ctrl-C, SIGTERM) and in the Monitor cancels the run's context: every
// job of the run still training is cancelled on the cluster (scancel), each job folder
// records that AMID cancelled it, and the run stops in exploration with its state saved,
// to be resumed.
func TestCancelStopsTheRunsJobs(t *testing.T) {
	needCluster(t)
	plugins := segmentation(t)
	data := t.TempDir()
	if err := synth.Demo(data, 6, 3); err != nil {
		t.Fatal(err)
	}
	// Four hundred steps: both lanes' jobs are still training when the run is cancelled.
	d := demoRun{Steps: 400, Task: filepath.Join(data, "task.yaml"), Home: t.TempDir(), Plugins: plugins, Amid: amidProgram(t), Dir: filepath.Join(t.TempDir(), "run")}
	env, done, err := d.env(true)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	opts := d.options()
	opts.Planner = lanes{"2d", "2.5d"}
	r, err := run.New(opts, env)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ended := make(chan error, 1)
	go func() { ended <- r.Run(ctx) }()
	training := func() int {
		n := 0
		for _, dir := range jobFolders(t, d.Dir) {
			evs, _ := lanejob.ReadEvents(filepath.Join(dir, lanejob.EventsFile))
			for _, e := range evs {
				if e.Kind == lanejob.KindProgress {
					n++
					break
				}
			}
		}
		return n
	}
	deadline := time.Now().Add(3 * time.Minute)
	for training() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the two lanes' jobs did not train within 3 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	select {
	case err = <-ended:
	case <-time.After(2 * time.Minute):
		t.Fatal("the cancelled run did not stop within 2 minutes")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled run ended with %v", err)
	}
	l := launcher(t, 0)
	dirs := jobFolders(t, d.Dir)
	if len(dirs) != 2 {
		t.Fatalf("%d job folders, want the two lanes'", len(dirs))
	}
	for _, dir := range dirs {
		rec := readRecord(t, dir)
		sub := rec.Submissions[len(rec.Submissions)-1]
		// The run ends once the job's own events show its end; Slurm may still hold it
		// as running a moment longer (its step completing: a CI run under -race saw
		// Phase Running right after the run returned), so its state is polled.
		var st lanejob.State
		for wait := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
			st, err = l.State(context.Background(), sub.Job)
			if err != nil {
				t.Fatal(err)
			}
			if st.Phase == lanejob.Ended || time.Now().After(wait) {
				break
			}
		}
		if !sub.HostCancelled || st.Phase != lanejob.Ended || st.Outcome != lanejob.Cancelled {
			t.Errorf("%s: job %s recorded as cancelled by AMID: %v; Slurm says %+v, want it cancelled", dir, sub.Job, sub.HostCancelled, st)
		}
	}
	st, err := run.LoadState(d.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Phase != run.PhaseExplore {
		t.Errorf("the cancelled run saved phase %s, want explore", st.Phase)
	}
}
