package supervisor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"amid/host/catalog"
	"amid/host/store"
	"amid/plugins/protocol"
)

// TestDropIn follows a plugin from the moment it is dropped into the plugin folder to
// prediction files on disk.
func TestDropIn(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.install(echoBin, "echo", 0o755)

	en, err := e.cat.Find("echo")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Start(ctx, en, e.opts); !errors.Is(err, catalog.ErrUntrusted) {
		t.Fatalf("untrusted start: err = %v, want ErrUntrusted", err)
	}
	if err := e.cat.Trust(en); err != nil {
		t.Fatal(err)
	}

	p, err := Start(ctx, en, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	d, err := p.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "echo" || d.Version != "1.0.0" || d.Tasks[0].Kind != "segmentation" {
		t.Errorf("Describe = %+v", d)
	}
	task := protocol.Task{Kind: "segmentation", Dims: 3, Metric: "dice"}
	plan, err := p.Plan(ctx, &protocol.PlanRequest{Fingerprint: []byte(`{"cases":2}`), Task: task})
	if err != nil {
		t.Fatal(err)
	}

	// Two training cases with known bytes: the echo model is their mean byte value.
	data := t.TempDir()
	imgA := filepath.Join(data, "a.raw")
	imgB := filepath.Join(data, "b.raw")
	os.WriteFile(imgA, []byte{0, 10, 20, 30}, 0o644)
	os.WriteFile(imgB, []byte{40, 50, 60, 70}, 0o644) // mean over both: 280/8 = 35
	cases := []protocol.Case{{ID: "a", Images: []string{imgA}}, {ID: "b", Images: []string{imgB}}}

	var events []*protocol.Progress
	sup := &Supervisor{Store: e.store, Opts: e.opts, OnProgress: func(_ string, pr *protocol.Progress) { events = append(events, pr) }}
	work := filepath.Join(t.TempDir(), "lane1")
	lane, err := sup.RunLane(ctx, &Lane{RunID: "run1", ID: "lane1", Entry: en, Request: protocol.TrainRequest{
		Task: task, Config: plan.Candidates[0].Config, Train: cases, WorkDir: work,
	}})
	if err != nil {
		t.Fatal(err)
	}
	// The "quick" candidate trains 20 steps with a checkpoint every 5 (plugins/examples/echo).
	if lane.State != store.LaneFinished || lane.Step != 20 || len(events) != 20 {
		t.Errorf("lane = %+v after %d progress events", lane, len(events))
	}
	if events[4].Checkpoint == "" || lane.LastCheckpoint != filepath.Join(work, "step-000020.json") {
		t.Errorf("checkpoints: event 5 %q, last %q", events[4].Checkpoint, lane.LastCheckpoint)
	}
	got, _ := e.store.Lane("run1", "lane1")
	if got.Checkpoint != filepath.Join(work, "final.json") || len(got.CheckpointSHA256) != 64 {
		t.Errorf("stored lane = %+v", got)
	}

	out := t.TempDir()
	pred, err := p.Predict(ctx, &protocol.PredictRequest{Task: task, Checkpoint: got.Checkpoint, Cases: cases, OutputDir: out})
	if err != nil {
		t.Fatal(err)
	}
	if len(pred.Predictions) != 2 {
		t.Fatalf("Predict = %+v", pred)
	}
	// Bytes above the mean 35 are 1.
	want := map[string]string{"a": "\x00\x00\x00\x00", "b": "\x01\x01\x01\x01"}
	for _, pr := range pred.Predictions {
		b, err := os.ReadFile(pr.Files[0])
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != want[pr.CaseID] {
			t.Errorf("prediction for %s = %v", pr.CaseID, b)
		}
	}
	evs, _ := e.store.Events("run1", "lane1")
	if len(evs) != 2 || !strings.Contains(evs[1].Message, "lane lane1 finished at step 20") {
		t.Errorf("events = %+v", evs)
	}
}
