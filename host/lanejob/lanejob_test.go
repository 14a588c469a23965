package lanejob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"amid/host/catalog"
	"amid/host/run"
	"amid/host/store"
	"amid/host/supervisor"
	"amid/plugins/plugintest"
	"amid/plugins/protocol"
)

// echoBin is the example plugin, built by TestMain: it trains a number of steps of step_ms
// each, writes a checkpoint every checkpoint_every steps and resumes from one.
var echoBin string

// Modes of the test binary, besides running the tests.
const (
	envExec = "AMID_LANEJOB_TEST_EXEC" // be `amid lane exec SPEC`
	envHost = "AMID_LANEJOB_TEST_HOST" // be a host following one lane-fold, to be killed
	envWait = "AMID_LANEJOB_TEST_WAIT" // wait this long before the lane exec starts (a queue)
)

func TestMain(m *testing.M) {
	switch {
	case os.Getenv(envExec) != "":
		if d, err := time.ParseDuration(os.Getenv(envWait)); err == nil {
			time.Sleep(d)
		}
		os.Exit(laneExec(os.Args[len(os.Args)-1]))
	case os.Getenv(envHost) != "":
		os.Exit(host(os.Getenv(envHost)))
	}
	plugintest.MainWith(m, func(dir string) (err error) {
		echoBin, err = plugintest.BuildPlugin("../../plugins/examples/echo", "echo", dir)
		return err
	})
}

// laneExec is what `amid lane exec` does (app/cli): SIGTERM cancels.
func laneExec(spec string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	end, err := Exec(ctx, spec, ExecOptions{Supervisor: quiet(), LockWait: time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return ExitFailed
	}
	return ExitCode(end)
}

func quiet() supervisor.Options {
	return supervisor.Options{Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Error, Output: io.Discard})}
}

// launcher runs this test binary as the lane exec.
func launcher() *Process {
	return &Process{Command: []string{os.Args[0]}, Env: []string{envExec + "=1"},
		Slots: []run.Place{{Name: "p0", Device: "cpu", Workers: 1}, {Name: "p1", Device: "cpu", Workers: 1}}}
}

// fixture is a trusted echo plugin and a lane-fold to train with it.
type fixture struct {
	entry *catalog.Entry
	data  string
	runs  string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	home := t.TempDir()
	st, err := store.Open(filepath.Join(home, "amid.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	plugins := t.TempDir()
	b, err := os.ReadFile(echoBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(plugins, "amid-plugin-echo"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	c := &catalog.Catalog{User: plugins, Store: st}
	e, err := c.Find("echo")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Trust(e); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "a.raw"), []byte{1, 2, 3, 200}, 0o644); err != nil {
		t.Fatal(err)
	}
	return &fixture{entry: e, data: data, runs: t.TempDir()}
}

// job is a lane-fold of steps steps of ms milliseconds, a checkpoint every every steps.
func (f *fixture) job(id string, steps, ms, every int) *run.TrainJob {
	cfg := fmt.Sprintf(`{"steps":%d,"step_ms":%d,"checkpoint_every":%d}`, steps, ms, every)
	return &run.TrainJob{RunID: "run1", ID: id, Entry: f.entry, Request: protocol.TrainRequest{
		Task: protocol.Task{Kind: "segmentation", Dims: 2, Metric: "dice", Spec: []byte(`{}`)}, Config: []byte(cfg),
		Train:   []protocol.Case{{ID: "a", Images: []string{filepath.Join(f.data, "a.raw")}}},
		WorkDir: filepath.Join(f.runs, "lanes", id, "r0"), Seed: 1,
	}}
}

// progressLog keeps what a Train handed on.
type progressLog struct {
	mu   sync.Mutex
	all  []protocol.Progress
	wait map[string]chan struct{}
}

func (p *progressLog) add(q *protocol.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.all = append(p.all, *q)
	for k, ch := range p.wait {
		if strings.Contains(q.Message, k) || k == "checkpoint" && q.Checkpoint != "" {
			close(ch)
			delete(p.wait, k)
		}
	}
}

// on returns a channel closed at the first progress whose message contains k ("checkpoint":
// the first checkpoint).
func (p *progressLog) on(k string) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.wait == nil {
		p.wait = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	p.wait[k] = ch
	return ch
}

func (p *progressLog) messages() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for _, q := range p.all {
		if q.Message != "" {
			fmt.Fprintf(&b, "step %d: %s\n", q.Step, q.Message)
		}
	}
	return b.String()
}

func (p *progressLog) steps() (first, last int64, ckpts int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	first = -1
	for _, q := range p.all {
		if q.Losses == nil {
			continue
		}
		if first < 0 {
			first = q.Step
		}
		last = q.Step
		if q.Checkpoint != "" {
			ckpts++
		}
	}
	return
}

func executor(dir string) *Executor {
	return &Executor{Launcher: launcher(), Dir: dir, Poll: 200 * time.Millisecond, Tail: 50 * time.Millisecond, EndWait: 2 * time.Second}
}

func waitFor(t *testing.T, ch chan struct{}, what string, d time.Duration) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("no %s within %v", what, d)
	}
}

// A lane-fold trained in a process of its own: its progress reaches the host as a local
// lane's does (every step, its checkpoints), and its result is the plugin's, verified.
func TestTrainInAProcess(t *testing.T) {
	f := newFixture(t)
	e := executor(f.runs)
	var pl progressLog
	job := f.job("a.f0", 20, 5, 5)
	res, err := e.Train(context.Background(), job, e.Places()[0], pl.add)
	if err != nil {
		t.Fatalf("%v\n%s", err, pl.messages())
	}
	first, last, ckpts := pl.steps()
	// The echo plugin reports every step, with a checkpoint every 5: steps 1 to 20, four
	// checkpoints.
	if first != 1 || last != 20 || ckpts != 4 || res.Steps != 20 {
		t.Errorf("progress from step %d to %d with %d checkpoints, result at step %d; want 1 to 20, 4, 20", first, last, ckpts, res.Steps)
	}
	if !strings.Contains(pl.messages(), "submitted as process") {
		t.Errorf("the submission was not said:\n%s", pl.messages())
	}
	rec, err := readRecord(Dir(job.Request.WorkDir))
	if err != nil || rec == nil || len(rec.Submissions) != 1 || rec.Submissions[0].Outcome != "finished" {
		t.Fatalf("job.json: %+v %v", rec, err)
	}
	// Asked again (a host that stopped before the run recorded the result), the executor
	// gives the same result and starts nothing.
	again, err := e.Train(context.Background(), job, e.Places()[0], nil)
	if err != nil || again.Checkpoint != res.Checkpoint || again.SHA256 != res.SHA256 || again.Steps != res.Steps {
		t.Errorf("asked again: %+v %v, want %+v", again, err, res)
	}
	if rec, _ := readRecord(Dir(job.Request.WorkDir)); len(rec.Submissions) != 1 {
		t.Errorf("asked again, it submitted %d jobs", len(rec.Submissions))
	}
}

// A job that waits for its place (a cluster's queue) reports the wait, from its submission
// to its start event, so that the run keeps it out of the lane's training time.
func TestQueuedReported(t *testing.T) {
	f := newFixture(t)
	e := executor(f.runs)
	l := launcher()
	// 1.5 s: well above the process start and the executor's 50 ms tail, well below the
	// time the whole job takes here.
	l.Env = append(l.Env, envWait+"=1.5s")
	e.Launcher = l
	res, err := e.Train(context.Background(), f.job("a.f0", 5, 0, 5), l.Places()[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Queued < 1500*time.Millisecond || res.Queued > 10*time.Second {
		t.Errorf("queued %v, want the 1.5 s the job waited before it started", res.Queued)
	}
	plain, err := executor(f.runs).Train(context.Background(), f.job("b.f0", 5, 0, 5), l.Places()[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Queued >= 1500*time.Millisecond {
		t.Errorf("a job that started at once reports %v queued", plain.Queued)
	}
}

// A plugin binary changed after the run trusted it is refused where the lane runs, before
// it is started, with a sentence that says so.
func TestChangedBinaryRefused(t *testing.T) {
	f := newFixture(t)
	job := f.job("a.f0", 5, 0, 5)
	req, err := NewRequest(job.Request)
	if err != nil {
		t.Fatal(err)
	}
	spec := &Spec{Version: specVersion, RunID: "run1", ID: job.ID, Plugin: Plugin{Name: "echo", Path: f.entry.Path, SHA256: f.entry.SHA256}, Request: req}
	path, err := spec.Write()
	if err != nil {
		t.Fatal(err)
	}
	fh, err := os.OpenFile(f.entry.Path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.Write([]byte("changed"))
	fh.Close()
	end, err := Exec(context.Background(), path, ExecOptions{Supervisor: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if end.State != EndFailed || !strings.Contains(end.Error, "not the "+f.entry.SHA256+" the run trusted") {
		t.Errorf("end %+v", end)
	}
	evs, _ := ReadEvents(filepath.Join(Dir(job.Request.WorkDir), EventsFile))
	for _, e := range evs {
		if e.Kind == KindLog && strings.Contains(e.Message, "plugin echo started") {
			t.Error("the changed plugin was started")
		}
	}
}

// pidsOf returns the pid of the lane exec process that wrote the last start event in the
// job folder of work.
func pidOf(t *testing.T, work string) int {
	t.Helper()
	evs, err := ReadEvents(filepath.Join(Dir(work), EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	pid := 0
	for _, e := range evs {
		if e.Kind == KindStart {
			pid = e.PID
		}
	}
	if pid == 0 {
		t.Fatal("no start event")
	}
	return pid
}

// A job killed outright (its node lost) is requeued once from its newest checkpoint; the
// second process starts only after the first has gone; killed again, the lane fails with
// the launcher's reason.
func TestLostRequeuedOnce(t *testing.T) {
	f := newFixture(t)
	e := executor(f.runs)
	var pl progressLog
	job := f.job("a.f0", 400, 25, 10)
	ck := pl.on("checkpoint")
	requeued := pl.on("requeueing")
	done := make(chan error, 1)
	go func() {
		_, err := e.Train(context.Background(), job, e.Places()[0], pl.add)
		done <- err
	}()
	waitFor(t, ck, "checkpoint", time.Minute)
	first := pidOf(t, job.Request.WorkDir)
	syscall.Kill(first, syscall.SIGKILL)
	waitFor(t, requeued, "requeue", time.Minute)
	ck2 := pl.on("continuing from checkpoint")
	waitFor(t, ck2, "resume from the checkpoint", time.Minute)
	second := pidOf(t, job.Request.WorkDir)
	if second == first {
		t.Fatal("no second process")
	}
	time.Sleep(300 * time.Millisecond)
	syscall.Kill(second, syscall.SIGKILL)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "requeued once already") || !strings.Contains(err.Error(), "signal: killed") {
			t.Errorf("error %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the lane did not fail")
	}
	evs, _ := ReadEvents(filepath.Join(Dir(job.Request.WorkDir), EventsFile))
	var starts []Event
	var lastFirst time.Time
	resumed := false
	for _, ev := range evs {
		if ev.Kind == KindStart {
			starts = append(starts, ev)
		}
		if ev.Job == strconv.Itoa(first) {
			lastFirst = ev.Time
		}
		if ev.Job == strconv.Itoa(second) && ev.Kind == KindProgress && ev.Progress.Losses != nil && !resumed {
			resumed = true
			if ev.Progress.Step <= 10 {
				t.Errorf("the second process began at step %d, not after the first's checkpoint", ev.Progress.Step)
			}
		}
	}
	if len(starts) != 2 || !starts[1].Time.After(lastFirst) {
		t.Errorf("%d processes started; the second at %v, the first's last event at %v", len(starts), starts[len(starts)-1].Time, lastFirst)
	}
	rec, _ := readRecord(Dir(job.Request.WorkDir))
	if rec.Requeues != 1 || len(rec.Submissions) != 2 {
		t.Errorf("job.json: %+v", rec)
	}
}

// A job cancelled by someone else fails its lane with the reason; one the host cancels
// (the run is paused) stops at a checkpoint and continues from it when asked again.
func TestCancels(t *testing.T) {
	f := newFixture(t)
	e := executor(f.runs)
	t.Run("outside", func(t *testing.T) {
		var pl progressLog
		job := f.job("out.f0", 400, 25, 10)
		ck := pl.on("checkpoint")
		done := make(chan error, 1)
		go func() {
			_, err := e.Train(context.Background(), job, e.Places()[0], pl.add)
			done <- err
		}()
		waitFor(t, ck, "checkpoint", time.Minute)
		syscall.Kill(pidOf(t, job.Request.WorkDir), syscall.SIGTERM)
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "was cancelled") || !strings.Contains(err.Error(), "not by AMID") {
				t.Errorf("error %v", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("the lane did not fail")
		}
	})
	t.Run("host", func(t *testing.T) {
		var pl progressLog
		job := f.job("host.f0", 100, 25, 10)
		ck := pl.on("checkpoint")
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := e.Train(ctx, job, e.Places()[0], pl.add)
			done <- err
		}()
		waitFor(t, ck, "checkpoint", time.Minute)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Train: %v", err)
		}
		rec, _ := readRecord(Dir(job.Request.WorkDir))
		if s := rec.last(); !s.HostCancelled || s.Outcome != "cancelled" {
			t.Fatalf("job.json after the host cancelled: %+v", s)
		}
		var again progressLog
		res, err := e.Train(context.Background(), job, e.Places()[0], again.add)
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := again.steps()
		if res.Steps != 100 || first <= 10 {
			t.Errorf("continued from step %d to %d; want from after the first checkpoint to 100", first, res.Steps)
		}
	})
}

// host follows one lane-fold in work until it is killed: the host that kill -9 takes.
func host(work string) int {
	f := &fixture{}
	b, _ := os.ReadFile(filepath.Join(work, "entry"))
	parts := strings.Fields(string(b))
	f.entry = &catalog.Entry{Name: "echo", Path: parts[0], SHA256: parts[1], State: catalog.Trusted}
	f.data, f.runs = parts[2], parts[3]
	e := executor(f.runs)
	_, err := e.Train(context.Background(), f.job("k.f0", 200, 25, 10), e.Places()[0], func(p *protocol.Progress) {
		if p.Checkpoint != "" {
			fmt.Println("checkpoint", p.Checkpoint)
		}
	})
	fmt.Println("ended", err)
	return 0
}

// A host killed outright leaves its job training; the next session re-attaches to it
// instead of starting it again, and gets its result.
func TestReattach(t *testing.T) {
	f := newFixture(t)
	info := t.TempDir()
	if err := os.WriteFile(filepath.Join(info, "entry"), fmt.Appendf(nil, "%s %s %s %s", f.entry.Path, f.entry.SHA256, f.data, f.runs), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envHost+"="+info)
	var stderr bytes.Buffer
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{})
	go func() {
		buf := make([]byte, 4096)
		pr.Read(buf)
		close(got)
		io.Copy(io.Discard, pr)
	}()
	select {
	case <-got:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatal("no checkpoint in the host within a minute")
	}
	cmd.Process.Kill()
	cmd.Wait()
	pw.Close()
	job := f.job("k.f0", 200, 25, 10)
	pid := pidOf(t, job.Request.WorkDir)
	if !laneExecAlive(strconv.Itoa(pid)) {
		t.Fatal("the lane exec died with its host")
	}
	e := executor(f.runs)
	var pl progressLog
	res, err := e.Train(context.Background(), job, e.Places()[0], pl.add)
	if err != nil {
		t.Fatalf("%v\n%s", err, pl.messages())
	}
	if res.Steps != 200 || !strings.Contains(pl.messages(), "re-attached to process "+strconv.Itoa(pid)) {
		t.Errorf("result at step %d; messages:\n%s", res.Steps, pl.messages())
	}
	rec, _ := readRecord(Dir(job.Request.WorkDir))
	if len(rec.Submissions) != 1 {
		t.Errorf("%d submissions, want the one job re-attached to", len(rec.Submissions))
	}
}

// Stop cancels a job that no Train follows (one a killed session left running).
func TestStop(t *testing.T) {
	f := newFixture(t)
	e := executor(f.runs)
	job := f.job("s.f0", 400, 25, 10)
	// What a session killed while its job trained leaves: the spec, the job, its record.
	req, err := NewRequest(job.Request)
	if err != nil {
		t.Fatal(err)
	}
	spec := &Spec{Version: specVersion, RunID: "run1", ID: job.ID, Plugin: Plugin{Name: "echo", Path: f.entry.Path, SHA256: f.entry.SHA256}, Place: e.Places()[0], Request: req}
	path, err := spec.Write()
	if err != nil {
		t.Fatal(err)
	}
	dir := Dir(job.Request.WorkDir)
	id, err := launcher().Submit(context.Background(), &Job{Dir: dir, Spec: path, Name: "s", Place: spec.Place})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&Record{ID: job.ID, Submissions: []Submission{{Job: id, Kind: "process"}}}).write(dir); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		evs, _ := ReadEvents(filepath.Join(dir, EventsFile))
		if ck, _ := newestCheckpoint(evs, job.Request.WorkDir); ck != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the lane exec wrote no checkpoint within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := e.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for laneExecAlive(id) {
		if time.Now().After(deadline) {
			t.Fatal("Stop left the job running")
		}
		time.Sleep(50 * time.Millisecond)
	}
	rec, _ := readRecord(dir)
	if !rec.last().HostCancelled {
		t.Errorf("job.json does not say the host cancelled it: %+v", rec.last())
	}
	// A later session continues the lane from where the cancelled job stopped.
	res, err := e.Train(context.Background(), job, e.Places()[0], nil)
	if err != nil || res.Steps != 400 {
		t.Fatalf("continued: %+v %v", res, err)
	}
	if rec, _ := readRecord(dir); len(rec.Submissions) != 2 || rec.Submissions[1].ResumeFrom == "" {
		t.Errorf("job.json after the later session: %+v", rec)
	}
}
