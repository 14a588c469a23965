package plugintest

import (
	"context"
	"maps"
	"slices"
	"testing"

	"amid/plugins/protocol"
)

// Trainer is a plugin's Train method, called in process.
type Trainer func(ctx context.Context, req *protocol.TrainRequest, report func(*protocol.Progress) error) (*protocol.TrainResult, error)

// CheckResume trains req in one run, and again resumed from that run's first epoch
// checkpoint into a new work folder, and fails unless every step after the checkpoint
// reports bit-identical losses in both: the resumed run had the same weights, optimizer
// state, learning rate and batches (the data order went on). req must report every step
// (report_every 1) and write an epoch checkpoint before its last step.
func CheckResume(t *testing.T, train Trainer, req *protocol.TrainRequest) {
	t.Helper()
	run := func(req *protocol.TrainRequest) (map[int64]map[string]float64, []string) {
		t.Helper()
		losses := map[int64]map[string]float64{}
		var cks []string
		if _, err := train(context.Background(), req, func(p *protocol.Progress) error {
			if p.Losses != nil {
				losses[p.Step] = p.Losses
			}
			if p.Checkpoint != "" {
				cks = append(cks, p.Checkpoint)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return losses, cks
	}
	whole, cks := run(req)
	if len(cks) == 0 {
		t.Fatalf("no epoch checkpoint in %d steps: the test would prove nothing", len(whole))
	}
	again := *req
	again.ResumeFrom, again.WorkDir = cks[0], t.TempDir()
	resumed, _ := run(&again)
	steps := slices.Sorted(maps.Keys(resumed))
	if len(steps) == 0 || steps[len(steps)-1] != slices.Max(slices.Collect(maps.Keys(whole))) {
		t.Fatalf("the resumed run reported steps %v, the whole run %d steps", steps, len(whole))
	}
	for _, s := range steps {
		if !maps.Equal(resumed[s], whole[s]) {
			t.Errorf("step %d: losses %v after resuming from %s, %v uninterrupted", s, resumed[s], cks[0], whole[s])
		}
	}
}

// CheckRounds trains req in one run, and again in two rounds: the first stops after step
// until (protocol.TrainRequest.Until) and the second continues from the first's final
// checkpoint to the end, as the host's schedule trains a lane. It fails unless the first
// round ends at step until and every step of the second reports bit-identical losses to the
// uninterrupted run's: the learning rate followed the schedule over the configured steps
// and the data order went on. req must report every step (report_every 1).
func CheckRounds(t *testing.T, train Trainer, req *protocol.TrainRequest, until int64) {
	t.Helper()
	run := func(req *protocol.TrainRequest) (map[int64]map[string]float64, *protocol.TrainResult) {
		t.Helper()
		losses := map[int64]map[string]float64{}
		res, err := train(context.Background(), req, func(p *protocol.Progress) error {
			if p.Losses != nil {
				losses[p.Step] = p.Losses
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return losses, res
	}
	whole, _ := run(req)
	first := *req
	first.Until, first.WorkDir = until, t.TempDir()
	_, res := run(&first)
	if res.Steps != until {
		t.Fatalf("the first round stopped at step %d, not at %d", res.Steps, until)
	}
	second := *req
	second.ResumeFrom, second.WorkDir = res.Checkpoint, t.TempDir()
	resumed, _ := run(&second)
	steps := slices.Sorted(maps.Keys(resumed))
	if len(steps) == 0 || steps[0] != until+1 || steps[len(steps)-1] != slices.Max(slices.Collect(maps.Keys(whole))) {
		t.Fatalf("the second round reported steps %v; the first stopped at %d, the whole run at %d", steps, until, len(whole))
	}
	for _, s := range steps {
		if !maps.Equal(resumed[s], whole[s]) {
			t.Errorf("step %d: losses %v in the second round, %v uninterrupted", s, resumed[s], whole[s])
		}
	}
}
