package supervisor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"amid/host/catalog"
	"amid/host/store"
	"amid/plugins/protocol"
)

// runFaulty trains one lane of the faulty plugin with AMID_FAULT=fault.
func runFaulty(t *testing.T, fault string, opts func(*Options)) (*env, *store.Lane, error) {
	t.Setenv("AMID_FAULT", fault)
	e := newEnv(t)
	if opts != nil {
		opts(&e.opts)
	}
	en := e.trusted(faultyBin, "faulty")
	var pids []int
	sup := &Supervisor{Store: e.store, Opts: e.opts, OnStart: func(_ string, pid int) { pids = append(pids, pid) }}
	lane, err := sup.RunLane(context.Background(), &Lane{RunID: "run1", ID: "l", Entry: en, Request: protocol.TrainRequest{
		Config: []byte(`{"steps":10}`), WorkDir: filepath.Join(t.TempDir(), "work"),
	}})
	for _, pid := range pids {
		if !gone(pid, 5*time.Second) {
			t.Errorf("plugin process %d outlived its lane", pid)
		}
	}
	return e, lane, err
}

func TestTrainFaults(t *testing.T) {
	noRestart := func(o *Options) { o.Restarts = -1 }
	for _, c := range []struct {
		fault string
		opts  func(*Options)
		want  string // in the lane's error
	}{
		{"exit", noRestart, "plugin faulty exited during Train (exit status 3)"},
		{"kill", noRestart, "plugin faulty exited during Train (signal: killed)"},
		{"hang", func(o *Options) { o.ProgressTimeout = 300 * time.Millisecond }, "plugin faulty sent no progress for 300ms during Train and was stopped"},
		{"error", nil, "plugin faulty failed Train: " + protocol.ErrIncomplete.Error()},
		{"bad-sha", nil, "plugin faulty's final checkpoint"},
		{"no-file", nil, "plugin faulty named a final checkpoint that cannot be read"},
		{"exit", func(o *Options) { o.Restarts = 2 }, "plugin faulty exited during Train (exit status 3)"},
	} {
		t.Run(c.fault, func(t *testing.T) {
			e, lane, err := runFaulty(t, c.fault, c.opts)
			if err == nil {
				t.Fatalf("lane finished: %+v", lane)
			}
			if lane.State != store.LaneFailed || !strings.Contains(lane.Error, c.want) || err.Error() != lane.Error {
				t.Errorf("lane %s: %q (returned %q), want an error containing %q", lane.State, lane.Error, err, c.want)
			}
			if strings.Count(lane.Error, "\n") > 0 {
				t.Errorf("the error is not one line: %q", lane.Error)
			}
			evs, _ := e.store.Events("run1", "l")
			if last := evs[len(evs)-1]; last.Message != lane.Error {
				t.Errorf("last event %q, want the lane's error", last.Message)
			}
			if c.fault == "bad-sha" && !strings.Contains(lane.Error, "not the "+strings.Repeat("0", 64)) {
				t.Errorf("bad-sha: %q", lane.Error)
			}
		})
	}
}

func TestCrashThenResume(t *testing.T) {
	e, lane, err := runFaulty(t, "crash-once", func(o *Options) { o.Restarts = 2 })
	if err != nil {
		t.Fatal(err)
	}
	// crash-once exits after step 3, having written a checkpoint at step 2; the restart
	// resumes from it and trains to step 10.
	if lane.State != store.LaneFinished || lane.Attempts != 2 || lane.Step != 10 {
		t.Errorf("lane = %+v", lane)
	}
	evs, _ := e.store.Events("run1", "l")
	var crash string
	for _, ev := range evs {
		if ev.Kind == "crash" {
			crash = ev.Message
		}
	}
	want := "plugin faulty exited during Train (exit status 3)"
	if !strings.Contains(crash, want) || !strings.Contains(crash, "restarting it in 10ms (attempt 2 of 3) from checkpoint ") || !strings.HasSuffix(crash, "step-2.txt") {
		t.Errorf("crash event %q", crash)
	}
}

func TestPluginOutputIsLogged(t *testing.T) {
	e, lane, err := runFaulty(t, "print", nil)
	if err != nil {
		t.Fatal(err)
	}
	if lane.State != store.LaneFinished {
		t.Errorf("lane = %+v", lane)
	}
	log := e.log.String()
	for _, want := range []string{"amid.faulty: stdout line at step 3: stream=stdout", "amid.faulty: stderr line at step 3: stream=stderr"} {
		if !strings.Contains(log, want) {
			t.Errorf("host log lacks %q:\n%s", want, log)
		}
	}
}

func TestCancelKeepsCheckpoint(t *testing.T) {
	e := newEnv(t)
	en := e.trusted(echoBin, "echo")
	data := filepath.Join(t.TempDir(), "img.raw")
	os.WriteFile(data, []byte{1, 2, 3}, 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var pid int
	var cancelled time.Time
	sup := &Supervisor{Store: e.store, Opts: e.opts,
		OnStart: func(_ string, p int) { pid = p },
		OnProgress: func(_ string, pr *protocol.Progress) {
			if pr.Checkpoint != "" && cancelled.IsZero() {
				cancelled = time.Now()
				cancel()
			}
		}}
	lane, err := sup.RunLane(ctx, &Lane{RunID: "run1", ID: "l", Entry: en, Request: protocol.TrainRequest{
		Config: []byte(`{"steps":100000,"step_ms":5,"checkpoint_every":4}`), WorkDir: t.TempDir(),
		Train: []protocol.Case{{ID: "x", Images: []string{data}}},
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	t.Logf("RunLane returned %v after the cancel", time.Since(cancelled))
	if alive(pid) {
		t.Errorf("plugin %d still runs after RunLane returned", pid)
	}
	if lane.State != store.LaneCancelled || lane.LastCheckpoint == "" {
		t.Fatalf("lane = %+v", lane)
	}
	if _, err := os.Stat(lane.LastCheckpoint); err != nil {
		t.Errorf("last checkpoint: %v", err)
	}
	evs, _ := e.store.Events("run1", "l")
	if msg := evs[len(evs)-1].Message; !strings.Contains(msg, "cancelled at step 4; its last checkpoint") {
		t.Errorf("event %q", msg)
	}
}

func TestStartAndCallFaults(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		fault string
		call  func(p *Process) error
		want  string
	}{
		{"stdout", nil, "plugin faulty wrote to stdout before its handshake"},
		{"hang-describe", func(p *Process) error { _, err := p.Describe(ctx); return err }, "plugin faulty did not answer Describe within its deadline and was stopped"},
		{"bad-describe", func(p *Process) error { _, err := p.Describe(ctx); return err }, "plugin faulty sent a malformed answer to Describe: malformed plugin response: plugin faulty speaks protocol 99, the host speaks 1"},
		{"bad-plan", func(p *Process) error { _, err := p.Plan(ctx, &protocol.PlanRequest{}); return err }, `plugin faulty sent a malformed answer to Plan: malformed plugin response: plan candidate "default"`},
	} {
		t.Run(c.fault, func(t *testing.T) {
			t.Setenv("AMID_FAULT", c.fault)
			e := newEnv(t)
			e.opts.CallTimeout = 300 * time.Millisecond
			en := e.trusted(faultyBin, "faulty")
			p, err := Start(ctx, en, e.opts)
			if err == nil {
				defer p.Kill()
				if c.call == nil {
					t.Fatal("started")
				}
				err = c.call(p)
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if c.fault == "hang-describe" && !p.Exited() {
				t.Error("the hung plugin still runs")
			}
		})
	}
}

func TestReplacedAfterTrust(t *testing.T) {
	e := newEnv(t)
	en := e.trusted(echoBin, "echo")
	e.install(faultyBin, "echo", 0o755)

	again, err := e.cat.Find("echo")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Start(context.Background(), again, e.opts); !errors.Is(err, catalog.ErrChanged) {
		t.Errorf("changed plugin: err = %v, want ErrChanged", err)
	}
	// An entry scanned before the swap still says trusted: go-plugin's checksum refuses it.
	_, err = Start(context.Background(), en, e.opts)
	if err == nil || !strings.Contains(err.Error(), "plugin echo was not started: its binary no longer matches the trusted sha256") {
		t.Errorf("stale entry: err = %v", err)
	}
}

func TestNotExecutable(t *testing.T) {
	e := newEnv(t)
	e.install(echoBin, "echo", 0o644)
	en, err := e.cat.Find("echo")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Start(context.Background(), en, e.opts); !errors.Is(err, catalog.ErrNotExecutable) {
		t.Errorf("err = %v, want ErrNotExecutable", err)
	}
	if err := e.cat.Trust(en); !errors.Is(err, catalog.ErrNotExecutable) {
		t.Errorf("trust: err = %v", err)
	}
}
