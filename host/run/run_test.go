package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"amid/host/audit"
	"amid/host/audit/audittest"
	"amid/host/catalog"
	"amid/host/export"
	"amid/host/planner"
	"amid/host/store"
	"amid/host/synth"
	"amid/plugins/plugintest"
)

// pluginDir holds the segmentation plugin, built once for the package's tests.
var pluginDir string

func TestMain(m *testing.M) {
	if os.Getenv("AMID_RUN_CHILD") != "" {
		os.Exit(child())
	}
	plugintest.MainWith(m, func(dir string) error {
		// Built as make builds it (with cgo, so SGEMM runs on OpenBLAS), not with
		// plugintest.BuildPlugin's pure-Go fallback: the run test trains for real.
		build := exec.Command("go", "build", "-o", filepath.Join(dir, "amid-plugin-segmentation"), "../../plugins/segmentation")
		if b, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("build the segmentation plugin: %w\n%s", err, b)
		}
		pluginDir = dir
		return nil
	})
}

// env opens a store in home, trusts the built plugin and returns the run environment.
func env(t testing.TB, home string) (Env, func()) {
	t.Helper()
	st, err := store.Open(filepath.Join(home, "amid.db"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c := &catalog.Catalog{Builtin: pluginDir, Store: st}
	e, err := c.Find("segmentation")
	if err != nil {
		t.Fatal(err)
	}
	if e.State != catalog.Trusted {
		if err := c.Trust(e); err != nil {
			t.Fatal(err)
		}
	}
	return Env{Catalog: c}, func() { st.Close() }
}

// demo writes a small demo task: 6 training and 1 test case.
func demo(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := synth.Demo(dir, 6, 3); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRunEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model for about a minute")
	}
	data := demo(t)
	home := t.TempDir()
	e, done := env(t, home)
	defer done()
	var log bytes.Buffer
	e.Events = func(ev Event) {
		if ev.Progress == nil {
			fmt.Fprintf(&log, "%s %s\n", ev.Phase, ev.Message)
		}
	}
	runDir := filepath.Join(t.TempDir(), "run")
	ref := &refiner{}
	r, err := New(Options{Task: filepath.Join(data, "task.yaml"), Dir: runDir, Budget: 50 * time.Second, Folds: 3, Planner: ref, PlannerName: "refiner"}, e)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	st := r.State()
	if st.Phase != PhaseDone || st.Chosen == "" || st.Package == "" {
		t.Fatalf("state %+v\n%s", st, log.String())
	}
	// The planner saw the first round's results; its new lane was explored, or the notes
	// say why exploration had no time left for it.
	noted := false
	for _, n := range st.Notes {
		noted = noted || strings.Contains(n, "lane refined, proposed after the first round") && strings.Contains(n, "is not trained")
	}
	if len(ref.saw) == 0 || !noted && (st.lane("refined") == nil || st.lane("refined").Folds[0].Status == "") {
		t.Errorf("the planner's refinement was not used: results seen %v, lanes %d, notes %q", len(ref.saw), len(st.Lanes), st.Notes)
	}
	// The reserve counts the plugin binary the package will hold (exportTime).
	if fi, err := os.Stat(filepath.Join(pluginDir, "amid-plugin-segmentation")); err != nil || st.PluginBytes != fi.Size() {
		t.Errorf("the run recorded a plugin of %d bytes; the segmentation plugin's binary: %v, %v", st.PluginBytes, fi, err)
	}
	best := st.lane(st.Chosen)
	m, n := best.Mean()
	t.Logf("chosen %s: mean validation Dice %.3f over %d folds\n%s", best.ID, m, n, log.String())
	// An untrained network scores near the chance Dice of 6 classes; a trained one finds at
	// least the large classes (background, brain), so its mean foreground Dice is above 0.2.
	if m < 0.2 {
		t.Errorf("validation Dice %.3f: the model learned nothing", m)
	}
	// The package verifies, including a reproduction from scratch, and across core types
	// within the tolerance table; a forged one does not.
	checkIdentities(t, st)
	if _, _, err := audit.VerifyJSONLFile(filepath.Join(st.Package, "audit.jsonl")); err != nil {
		t.Error(err)
	}
	if !strings.Contains(Report(st), "(chosen)") {
		t.Error("the report does not mark the chosen lane")
	}
	checkCard(t, st)
	// Export for the user is refused until every test case has a decision, unless a
	// reason is recorded.
	dest := filepath.Join(t.TempDir(), "reviewed")
	if _, err := ExportTo(context.Background(), runDir, dest, "", e); !errors.Is(err, ErrReview) {
		t.Errorf("export before review: %v, want ErrReview", err)
	}
	if err := Review(runDir, export.Decision{Case: "nobody", Decision: Approved}); err == nil {
		t.Error("a decision on an unknown case was accepted")
	}
	if err := Review(runDir, export.Decision{Case: "head007", Decision: Approved, Reviewer: "test", Note: "margins fine"}); err != nil {
		t.Fatal(err)
	}
	zip, err := ExportTo(context.Background(), runDir, dest, "", e)
	if err != nil {
		t.Fatalf("export after review: %v", err)
	}
	if _, err := export.Verify(context.Background(), zip, export.VerifyOptions{}); err != nil {
		t.Errorf("the reviewed package does not verify: %v", err)
	}
	var review []export.Decision
	if b, err := os.ReadFile(filepath.Join(dest, "review.json")); err != nil || json.Unmarshal(b, &review) != nil || len(review) != 1 || review[0].Note != "margins fine" {
		t.Errorf("review.json in the package: %s %v", b, err)
	}
	// A tampered weight file is caught.
	var man export.Manifest
	b, _ := os.ReadFile(filepath.Join(st.Package, "manifest.json"))
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	var weights string
	for _, f := range man.Files {
		if strings.HasPrefix(f.Path, "model/") && !strings.HasSuffix(f.Path, "config.json") {
			weights = filepath.Join(st.Package, f.Path)
		}
	}
	w, err := os.ReadFile(weights)
	if err != nil {
		t.Fatal(err)
	}
	w[len(w)/2] ^= 1
	if err := os.WriteFile(weights, w, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := export.Verify(context.Background(), st.Package, export.VerifyOptions{}); err == nil {
		t.Error("a changed weight file passed verification")
	}
}

// refiner plans the first lane of the rules and, shown results, adds one lane: the best
// lane's configuration with half its learning rate.
type refiner struct{ saw []planner.Result }

func (f *refiner) Plan(ctx context.Context, in planner.Input) ([]planner.Lane, error) {
	if len(in.Results) == 0 {
		// The first network lane: the test follows a network's rounds, its refinement
		// and its reproduction across core types (a forest's lane has a cap and no
		// tensors to forge).
		lanes, err := planner.Rules{}.Plan(ctx, in)
		for _, l := range lanes {
			if l.MaxSteps == 0 {
				return []planner.Lane{l}, err
			}
		}
		return lanes[:1], err
	}
	f.saw = in.Results
	var cfg map[string]any
	if err := json.Unmarshal(in.Results[0].Config, &cfg); err != nil {
		return nil, err
	}
	lr, _ := cfg["learning_rate"].(float64)
	if lr == 0 {
		lr = 3e-3 // the segmentation plugin's default
	}
	cfg["learning_rate"] = lr / 2
	b, _ := json.Marshal(cfg)
	return []planner.Lane{{Name: "refined", Plugin: in.Results[0].Plugin, Config: b, Rationale: "half the learning rate of the best lane"}}, nil
}

// child runs a run from the environment and is killed by the test.
func child() int {
	dir := os.Getenv("AMID_RUN_CHILD")
	st, err := store.Open(filepath.Join(os.Getenv("AMID_RUN_HOME"), "amid.db"), 5*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer st.Close()
	e := Env{Catalog: &catalog.Catalog{Builtin: os.Getenv("AMID_RUN_PLUGINS"), Store: st}}
	r, err := New(Options{Task: os.Getenv("AMID_RUN_TASK"), Dir: dir, Budget: 60 * time.Second, Folds: 2}, e)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := r.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestKillAndResume kills the host with SIGKILL while a lane trains and resumes the run.
func TestKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	data := demo(t)
	home := t.TempDir()
	_, done := env(t, home)
	done() // trusted; the child opens the store itself
	runDir := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "AMID_RUN_CHILD="+runDir, "AMID_RUN_HOME="+home, "AMID_RUN_PLUGINS="+pluginDir, "AMID_RUN_TASK="+filepath.Join(data, "task.yaml"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until a lane has written a checkpoint, then kill the host and its plugins.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		ck, _ := filepath.Glob(filepath.Join(runDir, "lanes", "*", "f0", "r*", "*.ckpt"))
		if len(ck) > 0 {
			break
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			t.Fatalf("no checkpoint within 3 minutes:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	st, err := LoadState(runDir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Phase != PhaseExplore {
		t.Fatalf("killed in phase %s, want explore", st.Phase)
	}
	e, done := env(t, home)
	defer done()
	r, err := Open(runDir, nil, e)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if r.State().Phase != PhaseDone {
		t.Fatalf("resumed run ended in phase %s", r.State().Phase)
	}
	resumed := false
	for _, en := range audittest.Entries(t, filepath.Join(runDir, "audit.db")) {
		resumed = resumed || en.Action == "run.resumed"
	}
	if !resumed {
		t.Error("the audit log does not record the resume")
	}
}
