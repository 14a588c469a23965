package slurm

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"amid/assets/ci"
	"amid/host/catalog"
	"amid/host/lanejob"
	"amid/host/run"
	"amid/host/store"
	"amid/host/supervisor"
	"amid/plugins/plugintest"
	"amid/plugins/protocol"
)

// The tests below run against a real one-node Slurm cluster on loopback: the one
// .ci/slurm.sh starts (TestMain starts it unless it answers already, and stops what it
// started). The jobs of the executor's own tests run this test binary as `amid lane exec`
// (envExec; the lane exec is amid/host/lanejob.Exec, which `amid lane exec` calls), so that
// they can stand in for failures; the demo's jobs (TestDemoOnSlurm) run the built amid.

// Modes of the test binary, besides running the tests.
const (
	envExec = "AMID_SLURM_TEST_EXEC" // be `amid lane exec SPEC`
	envHost = "AMID_SLURM_TEST_HOST" // be the host of a run on the cluster, to be killed
)

var (
	// clusterErr says why there is no cluster to test against (nil: there is).
	clusterErr error
	// echoBin is the example plugin: steps of step_ms each, a checkpoint every
	// checkpoint_every, resumes from one.
	echoBin string
	// runID names this test process's jobs (their names carry it).
	runID = fmt.Sprintf("slurmtest%d", os.Getpid())
)

func TestMain(m *testing.M) {
	switch {
	case os.Getenv(envExec) != "":
		os.Exit(laneExec(os.Args[len(os.Args)-1]))
	case os.Getenv(envHost) != "":
		os.Exit(demoHost(os.Getenv(envHost)))
	}
	flag.Parse()
	dir, err := os.MkdirTemp("", "amid-slurm-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if echoBin, err = plugintest.BuildPlugin("../../plugins/examples/echo", "echo", dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	started := false
	if testing.Short() {
		clusterErr = errors.New("-short: no Slurm cluster")
	} else {
		started, clusterErr = startCluster()
	}
	code := m.Run()
	if clusterErr == nil {
		cancelOurs()
	}
	if started {
		if out, err := exec.Command("../../.ci/slurm.sh", "stop").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the test cluster: %v\n%s", err, out)
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// startCluster starts the test cluster unless it answers already, and points the Slurm
// commands at it (SLURM_CONF).
func startCluster() (started bool, err error) {
	script := "../../.ci/slurm.sh"
	if exec.Command(script, "status").Run() != nil {
		if out, err := exec.Command(script, "start").CombinedOutput(); err != nil {
			return false, fmt.Errorf("no Slurm test cluster (make test installs slurm-wlm and munge; .ci/slurm.sh start): %v\n%s", err, out)
		}
		started = true
	}
	out, err := exec.Command(script, "env").Output()
	if err != nil {
		return started, err
	}
	for _, kv := range strings.Fields(string(out)) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			os.Setenv(k, v)
		}
	}
	return started, nil
}

// cancelOurs cancels every job this test process submitted that still runs.
func cancelOurs() {
	out, err := exec.Command("squeue", "--json").Output()
	if err != nil {
		return
	}
	var doc struct {
		Jobs []struct {
			ID    json.Number `json:"job_id"`
			Name  string      `json:"name"`
			State any         `json:"job_state"`
		} `json:"jobs"`
	}
	if json.Unmarshal(out, &doc) != nil {
		return
	}
	var ids []string
	for _, j := range doc.Jobs {
		if strings.Contains(j.Name, runID) && fmt.Sprint(j.State) != "COMPLETED" {
			ids = append(ids, j.ID.String())
		}
	}
	if len(ids) > 0 {
		_ = exec.Command("scancel", ids...).Run()
	}
}

// needCluster stops a test that has no cluster: a failure in CI, a skip elsewhere.
func needCluster(t *testing.T) {
	t.Helper()
	if clusterErr != nil {
		ci.Missing(t, clusterErr.Error())
	}
}

// laneExec is what `amid lane exec` does (app/cli): SIGTERM cancels.
func laneExec(spec string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	end, err := lanejob.Exec(ctx, spec, lanejob.ExecOptions{Supervisor: quiet(), LockWait: time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return lanejob.ExitFailed
	}
	return lanejob.ExitCode(end)
}

func quiet() supervisor.Options {
	return supervisor.Options{Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Error, Output: io.Discard})}
}

// launcher submits jobs that run this test binary as the lane exec: two CPU places of one
// core each, and one GPU place (the test cluster has 2 CPUs and two stand-in GPUs).
func launcher(t testing.TB, gpus int) *Launcher {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(Options{Jobs: 2, CPUs: 1, GPUs: gpus, Memory: 256 << 20, Program: exe, Env: []string{envExec + "=1"}, Poll: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func executor(t testing.TB, dir string, gpus int) *lanejob.Executor {
	return &lanejob.Executor{Launcher: launcher(t, gpus), Dir: dir, Poll: 500 * time.Millisecond, Tail: 100 * time.Millisecond, EndWait: 5 * time.Second}
}

// echoEntry is a trusted copy of the echo plugin in a folder of its own.
func echoEntry(t *testing.T) *catalog.Entry {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "amid.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dir := t.TempDir()
	b, err := os.ReadFile(echoBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "amid-plugin-echo"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	c := &catalog.Catalog{User: dir, Store: st}
	e, err := c.Find("echo")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Trust(e); err != nil {
		t.Fatal(err)
	}
	return e
}

// echoJob is a lane-fold of the echo plugin: steps of ms milliseconds, a checkpoint every
// ten.
func echoJob(t *testing.T, e *catalog.Entry, runs, id string, steps, ms int) *run.TrainJob {
	t.Helper()
	data := t.TempDir()
	img := filepath.Join(data, "a.raw")
	if err := os.WriteFile(img, []byte{1, 2, 3, 200}, 0o644); err != nil {
		t.Fatal(err)
	}
	return &run.TrainJob{RunID: runID, ID: id, Entry: e, Memory: 64 << 20, Request: protocol.TrainRequest{
		Task:   protocol.Task{Kind: "segmentation", Dims: 2, Metric: "dice", Spec: []byte(`{}`)},
		Config: fmt.Appendf(nil, `{"steps":%d,"step_ms":%d,"checkpoint_every":10}`, steps, ms),
		Train:  []protocol.Case{{ID: "a", Images: []string{img}}}, WorkDir: filepath.Join(runs, "lanes", id, "r0"), Seed: 1,
	}}
}

// watch keeps what a Train hands on and signals the first of what a test waits for.
type watch struct {
	mu   sync.Mutex
	msgs []string
	wait map[string]chan struct{}
}

func (w *watch) progress(p *protocol.Progress) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p.Message != "" {
		w.msgs = append(w.msgs, p.Message)
	}
	for k, ch := range w.wait {
		if strings.Contains(p.Message, k) || k == "checkpoint" && p.Checkpoint != "" {
			close(ch)
			delete(w.wait, k)
		}
	}
}

func (w *watch) on(k string) chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wait == nil {
		w.wait = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	w.wait[k] = ch
	return ch
}

func (w *watch) log() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.msgs, "\n")
}

func waitFor(t *testing.T, ch chan struct{}, what string, d time.Duration, w *watch) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("no %s within %v; the lane said:\n%s", what, d, w.log())
	}
}

// train runs Train in the background.
func train(e *lanejob.Executor, job *run.TrainJob, place run.Place, w *watch) chan error {
	done := make(chan error, 1)
	go func() {
		_, err := e.Train(context.Background(), job, place, w.progress)
		done <- err
	}()
	return done
}

func result(t *testing.T, done chan error, d time.Duration, w *watch) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("the lane did not end within %v; it said:\n%s", d, w.log())
	}
	return nil
}

// squeueJob is the JSON squeue gives of job id, as a map.
func squeueJob(t *testing.T, id string) map[string]any {
	t.Helper()
	out, err := exec.Command("squeue", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Jobs []map[string]any `json:"jobs"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	for _, j := range doc.Jobs {
		if fmt.Sprint(j["job_id"]) == id {
			return j
		}
	}
	t.Fatalf("squeue does not list job %s", id)
	return nil
}

// record is the job folder's job.json of a lane-fold.
func record(t *testing.T, job *run.TrainJob) *lanejob.Record {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(lanejob.Dir(job.Request.WorkDir), lanejob.RecordFile))
	if err != nil {
		t.Fatal(err)
	}
	var r lanejob.Record
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

func events(t *testing.T, job *run.TrainJob) []lanejob.Event {
	t.Helper()
	evs, err := lanejob.ReadEvents(filepath.Join(lanejob.Dir(job.Request.WorkDir), lanejob.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// Two lane-folds train at once as two Slurm jobs, one on a GPU place: each job asks for
// what its lane needs (a core, the memory, the GPU, the time limit with its margin, a name
// with the run and lane ids), and each ends with its plugin's result.
func TestJobs(t *testing.T) {
	needCluster(t)
	e := echoEntry(t)
	runs := t.TempDir()
	ex := executor(t, runs, 1)
	places := ex.Places()
	if len(places) != 3 || places[2].Device != GPUDevice {
		t.Fatalf("places %+v, want two CPU places and a GPU one", places)
	}
	cpuJob, gpuJob := echoJob(t, e, runs, "cpu.f0", 60, 50), echoJob(t, e, runs, "gpu.f0", 60, 50)
	cpuJob.Request.TimeLimit = 30 * time.Second
	var wc, wg watch
	dc, dg := train(ex, cpuJob, places[0], &wc), train(ex, gpuJob, places[2], &wg)
	if err := result(t, dc, 2*time.Minute, &wc); err != nil {
		t.Fatalf("CPU lane: %v\n%s", err, wc.log())
	}
	if err := result(t, dg, 2*time.Minute, &wg); err != nil {
		t.Fatalf("GPU lane: %v\n%s", err, wg.log())
	}
	spans := map[string][2]time.Time{}
	for _, j := range []*run.TrainJob{cpuJob, gpuJob} {
		evs := events(t, j)
		spans[j.ID] = [2]time.Time{evs[0].Time, evs[len(evs)-1].Time}
		if last := evs[len(evs)-1]; last.Kind != lanejob.KindEnd || last.End.State != lanejob.EndFinished || last.End.Result.Steps != 60 {
			t.Errorf("%s ended %+v", j.ID, last.End)
		}
	}
	if a, b := spans["cpu.f0"], spans["gpu.f0"]; !a[0].Before(b[1]) || !b[0].Before(a[1]) {
		t.Errorf("the two jobs did not train at once: %v and %v", a, b)
	}
	cj, gj := squeueJob(t, record(t, cpuJob).Submissions[0].Job), squeueJob(t, record(t, gpuJob).Submissions[0].Job)
	// The CPU lane: one core, 256 MiB (the least, over 2 × 64 MiB + 1 GiB? no: 1152 MiB),
	// 30 s + a 5 min 3 s margin = 6 min, no GPU.
	if cj["name"] != "amid-"+runID+"-cpu.f0" || cj["tres_req_str"] != "cpu=1,mem=1152M,node=1,billing=1" || fmt.Sprint(cj["time_limit"]) != "6" || cj["tres_per_node"] != "" {
		t.Errorf("the CPU lane's job: name %v, tres %v, time limit %v, gres %q", cj["name"], cj["tres_req_str"], cj["time_limit"], cj["tres_per_node"])
	}
	if gj["tres_per_node"] != "gres:gpu:1" {
		t.Errorf("the GPU lane's job asked for %q, not one GPU", gj["tres_per_node"])
	}
}

// A plugin binary changed on the shared folder after the run sent the lane (while its job
// waited in the queue) is refused on the node before it starts, and the lane fails with
// a sentence saying why.
func TestChangedPluginRefusedOnNode(t *testing.T) {
	needCluster(t)
	e := echoEntry(t)
	runs := t.TempDir()
	ex := executor(t, runs, 0)
	// A job holding both CPUs keeps the lane's waiting.
	out, err := exec.Command("sbatch", "--parsable", "--job-name=amid-"+runID+"-blocker", "--cpus-per-task=2", "--mem=64M",
		"--output=/dev/null", "--wrap=sleep 120").Output()
	if err != nil {
		t.Fatal(err)
	}
	blocker := strings.TrimSpace(string(out))
	defer exec.Command("scancel", blocker).Run()
	job := echoJob(t, e, runs, "changed.f0", 20, 10)
	var w watch
	queued := w.on("queued")
	done := train(ex, job, ex.Places()[0], &w)
	waitFor(t, queued, "queued job", time.Minute, &w)
	fh, err := os.OpenFile(e.Path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.Write([]byte("a byte more"))
	fh.Close()
	if err := exec.Command("scancel", blocker).Run(); err != nil {
		t.Fatal(err)
	}
	err = result(t, done, 2*time.Minute, &w)
	if err == nil || !strings.Contains(err.Error(), "not the "+e.SHA256+" the run trusted") || !strings.Contains(err.Error(), "is not started") {
		t.Errorf("error %v", err)
	}
	for _, ev := range events(t, job) {
		if strings.Contains(ev.Message, "plugin echo started") {
			t.Error("the changed binary was started")
		}
	}
}

// A job cancelled from outside (scancel by someone else) fails its lane with the reason.
func TestCancelledOutside(t *testing.T) {
	needCluster(t)
	e := echoEntry(t)
	runs := t.TempDir()
	ex := executor(t, runs, 0)
	job := echoJob(t, e, runs, "cancelled.f0", 600, 50)
	var w watch
	ck := w.on("checkpoint")
	done := train(ex, job, ex.Places()[0], &w)
	waitFor(t, ck, "checkpoint", time.Minute, &w)
	id := record(t, job).Submissions[0].Job
	if out, err := exec.Command("scancel", id).CombinedOutput(); err != nil {
		t.Fatalf("scancel: %v %s", err, out)
	}
	err := result(t, done, time.Minute, &w)
	if want := "Slurm job " + id + " was cancelled on amid1, not by AMID"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

// downNode takes the test node down as a failure would and kills what the job of the
// lane-fold runs there (its lane exec and plugin), as a power loss does.
func downNode(t *testing.T, job *run.TrainJob, reason string) {
	t.Helper()
	if out, err := exec.Command("scontrol", "update", "NodeName=amid1", "State=DOWN", "Reason="+reason).CombinedOutput(); err != nil {
		t.Fatalf("scontrol: %v %s", err, out)
	}
	evs := events(t, job)
	var pids []int
	for _, ev := range evs[lastStart(evs):] {
		if ev.PID != 0 {
			pids = append(pids, ev.PID)
		}
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

func lastStart(evs []lanejob.Event) int {
	i := 0
	for k, ev := range evs {
		if ev.Kind == lanejob.KindStart {
			i = k
		}
	}
	return i
}

// resumeNode brings the test node back (Slurm may have already: ReturnToService=2).
func resumeNode() {
	_ = exec.Command("scontrol", "update", "NodeName=amid1", "State=RESUME").Run()
}

// A node failure mid-job requeues the lane once, from its newest checkpoint, never
// training it twice at the same time; a second failure fails it with Slurm's reason.
func TestNodeFailure(t *testing.T) {
	needCluster(t)
	defer resumeNode()
	e := echoEntry(t)
	runs := t.TempDir()
	ex := executor(t, runs, 0)
	job := echoJob(t, e, runs, "node.f0", 600, 50)
	var w watch
	ck := w.on("checkpoint")
	requeued := w.on("requeueing the lane once")
	done := train(ex, job, ex.Places()[0], &w)
	waitFor(t, ck, "checkpoint", time.Minute, &w)
	downNode(t, job, "amid test: power lost")
	waitFor(t, requeued, "requeue", time.Minute, &w)
	resumeNode()
	continuing := w.on("continuing from checkpoint")
	waitFor(t, continuing, "second job from the checkpoint", 2*time.Minute, &w)
	ck2 := w.on("checkpoint")
	waitFor(t, ck2, "checkpoint of the second job", time.Minute, &w)
	downNode(t, job, "amid test: power lost again")
	err := result(t, done, time.Minute, &w)
	rec := record(t, job)
	if len(rec.Submissions) != 2 || rec.Requeues != 1 {
		t.Fatalf("job.json: %+v", rec)
	}
	first, second := rec.Submissions[0].Job, rec.Submissions[1].Job
	want := fmt.Sprintf("Slurm job %s ended NODE_FAIL (NodeDown", second)
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "requeued once already (Slurm job "+first+" ended NODE_FAIL (NodeDown") {
		t.Errorf("error %v, want one starting %q that names the first failure", err, want)
	}
	// The second job began after the first's last event, from a checkpoint of the first.
	var firstLast time.Time
	var secondStart *lanejob.Event
	var resumed int64
	for _, ev := range events(t, job) {
		switch {
		case ev.Job == first:
			firstLast = ev.Time
		case ev.Job == second && ev.Kind == lanejob.KindStart:
			secondStart = &ev
		case ev.Job == second && ev.Kind == lanejob.KindProgress && resumed == 0:
			resumed = ev.Progress.Step
		}
	}
	if secondStart == nil || !secondStart.Time.After(firstLast) {
		t.Errorf("the second job started at %v, the first wrote until %v", secondStart, firstLast)
	}
	if rec.Submissions[1].ResumeFrom == "" || resumed <= 10 {
		t.Errorf("the second job resumed from %q and first reported step %d; want a checkpoint of the first", rec.Submissions[1].ResumeFrom, resumed)
	}
}
