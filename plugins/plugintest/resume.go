package plugintest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"amid/plugins/protocol"
)

// Trainer is a plugin's Train method: protocol.Plugin's, over gRPC, or the plugin's own,
// called in process.
type Trainer func(ctx context.Context, req *protocol.TrainRequest, report func(*protocol.Progress) error) (*protocol.TrainResult, error)

// losses are the losses a run reported, by step.
type losses map[int64]map[string]float64

// last is the last step reported (0 when none was).
func (l losses) last() int64 {
	if len(l) == 0 {
		return 0
	}
	return slices.Max(slices.Collect(maps.Keys(l)))
}

// checkpoint is an epoch checkpoint a run reported and the step it reported it at.
type checkpoint struct {
	path string
	step int64
}

// run trains req and returns the losses it reported, the epoch checkpoints in the order
// reported and its result; what names the run in a failure.
func run(t testing.TB, train Trainer, req *protocol.TrainRequest, what string) (losses, []checkpoint, *protocol.TrainResult) {
	t.Helper()
	ls := losses{}
	var cks []checkpoint
	res, err := train(context.Background(), req, func(p *protocol.Progress) error {
		if p.Losses != nil {
			ls[p.Step] = p.Losses
		}
		if p.Checkpoint != "" {
			cks = append(cks, checkpoint{p.Checkpoint, p.Step})
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: Train: %v", what, err)
	}
	return ls, cks, res
}

// same fails unless every step of got from its first to the uninterrupted run's last
// reports the losses of the uninterrupted run, whole; what names the check and from the
// step got starts after.
func same(t testing.TB, what string, got, whole losses, from int64) {
	t.Helper()
	steps := slices.Sorted(maps.Keys(got))
	if len(steps) == 0 || steps[0] != from+1 || steps[len(steps)-1] != whole.last() {
		t.Errorf("%s: the run reported steps %v, want %d to %d (the uninterrupted run's last): the configuration must report every step", what, steps, from+1, whole.last())
		return
	}
	for _, s := range steps {
		if !maps.Equal(got[s], whole[s]) {
			t.Errorf("%s: step %d: losses %v, %v uninterrupted", what, s, got[s], whole[s])
		}
	}
}

// CheckResume trains req in one run, and again resumed from that run's first epoch
// checkpoint into a new work folder, and fails unless every step after the checkpoint
// reports bit-identical losses in both: the resumed run had the same weights, optimizer
// state, learning rate and batches (the data order went on). req must report every step
// (report_every 1) and write an epoch checkpoint before its last step.
func CheckResume(t testing.TB, train Trainer, req *protocol.TrainRequest) {
	t.Helper()
	whole, cks, _ := run(t, train, req, "resume: the uninterrupted run")
	checkResume(t, train, req, whole, cks)
}

// checkResume is CheckResume given the uninterrupted run's losses and epoch checkpoints.
func checkResume(t testing.TB, train Trainer, req *protocol.TrainRequest, whole losses, cks []checkpoint) {
	t.Helper()
	if len(cks) == 0 {
		t.Errorf("resume: no epoch checkpoint in %d steps: the check would prove nothing; the configuration must write one before its last step", whole.last())
		return
	}
	ck := cks[0]
	again := *req
	again.ResumeFrom, again.WorkDir = ck.path, t.TempDir()
	resumed, _, _ := run(t, train, &again, "resume")
	same(t, fmt.Sprintf("resume from the checkpoint of step %d", ck.step), resumed, whole, ck.step)
}

// CheckRounds trains req in one run, and again in two rounds: the first stops after step
// until (protocol.TrainRequest.Until) and the second continues from the first's final
// checkpoint to the end, as the host's schedule trains a lane. It fails unless the first
// round ends at step until and every step of the second reports bit-identical losses to the
// uninterrupted run's: the learning rate followed the schedule over the configured steps
// and the data order went on. req must report every step (report_every 1).
func CheckRounds(t testing.TB, train Trainer, req *protocol.TrainRequest, until int64) {
	t.Helper()
	whole, _, _ := run(t, train, req, "rounds: the uninterrupted run")
	checkRounds(t, train, req, until, whole)
}

// checkRounds is CheckRounds given the uninterrupted run's losses.
func checkRounds(t testing.TB, train Trainer, req *protocol.TrainRequest, until int64, whole losses) {
	t.Helper()
	if until < 1 || until >= whole.last() {
		t.Errorf("rounds: the first round's last step %d is not inside the uninterrupted run's %d steps", until, whole.last())
		return
	}
	first := *req
	first.Until, first.WorkDir = until, t.TempDir()
	_, _, res := run(t, train, &first, "rounds: the first round")
	if res.Steps != until {
		t.Errorf("rounds: the first round (Until %d) stopped at step %d: a plugin must stop after step TrainRequest.Until", until, res.Steps)
		return
	}
	second := *req
	second.ResumeFrom, second.WorkDir = res.Checkpoint, t.TempDir()
	resumed, _, _ := run(t, train, &second, "rounds: the second round")
	same(t, "rounds: the second round", resumed, whole, until)
}

// checkTraining trains req once and checks resuming from its first epoch checkpoint
// (CheckResume) and training it in two rounds split after step until, or after half its
// steps when until is 0 (CheckRounds).
func checkTraining(t testing.TB, train Trainer, req *protocol.TrainRequest, until int64) {
	t.Helper()
	whole, cks, _ := run(t, train, req, "resume and rounds: the uninterrupted run")
	checkResume(t, train, req, whole, cks)
	if until == 0 {
		until = max(whole.last()/2, 1)
	}
	checkRounds(t, train, req, until, whole)
}

// CheckExtend trains req, whose configuration trains 4 steps with an epoch every 2, and
// again from its final checkpoint into a new work folder with the configuration longer:
// the same network trained 8 steps. It fails unless the first run writes one epoch
// checkpoint (epoch-0001.ckpt) before its final one and ends at step 4, and the second
// continues at step 5 and ends at step 8. It returns both runs' results for the plugin's
// own checks (the final checkpoint's step and epoch in its format, predicting with it,
// refusing another network's).
func CheckExtend(t testing.TB, train Trainer, req *protocol.TrainRequest, longer []byte) (short, long *protocol.TrainResult) {
	t.Helper()
	var cks []string
	short, err := train(context.Background(), req, func(p *protocol.Progress) error {
		if p.Checkpoint != "" {
			cks = append(cks, p.Checkpoint)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("extend: the 4-step run: Train: %v", err)
	}
	if len(cks) != 1 || filepath.Base(cks[0]) != "epoch-0001.ckpt" || short.Steps != 4 {
		t.Fatalf("extend: the 4-step run wrote checkpoints %v and ended %+v; want epoch-0001.ckpt (step 2), then its final one at step 4", cks, short)
	}
	again := *req
	again.Config, again.ResumeFrom, again.WorkDir = longer, short.Checkpoint, t.TempDir()
	var first int64
	long, err = train(context.Background(), &again, func(p *protocol.Progress) error {
		if first == 0 {
			first = p.Step
		}
		return nil
	})
	if err != nil {
		t.Fatalf("extend: the run resumed to step 8: Train: %v", err)
	}
	if first != 5 || long.Steps != 8 {
		t.Errorf("extend: resumed at step %d, ended at %d; want 5 and 8", first, long.Steps)
	}
	return short, long
}

// CheckCancel trains req in process, whose configuration runs far longer than the test
// and writes a checkpoint every step, and cancels it at its second step: Train must return
// context.Canceled within CancelGrace, and the last checkpoint it reported must still be
// on disk. (The conformance suite's check, over gRPC, allows a run that finishes first.)
func CheckCancel(t testing.TB, train Trainer, req *protocol.TrainRequest) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var last string
	var at time.Time
	_, err := train(ctx, req, func(p *protocol.Progress) error {
		if p.Checkpoint != "" {
			last = p.Checkpoint
		}
		if p.Step == 2 {
			at = time.Now()
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancel: Train after a cancel at step 2: %v, want context.Canceled", err)
	}
	if waited := time.Since(at); waited > CancelGrace {
		t.Errorf("cancel: Train took %v to stop, the protocol allows %v", waited, CancelGrace)
	}
	if _, err := os.Stat(last); err != nil {
		t.Errorf("cancel: the last checkpoint: %v", err)
	}
}
