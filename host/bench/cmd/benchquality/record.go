package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"

	"amid/host/catalog"
	"amid/host/evaluate"
	"amid/host/ingest"
	"amid/host/predict"
	"amid/host/profile"
	"amid/host/schedule"
	"amid/host/store"
	"amid/host/supervisor"
	"amid/host/task"
	"amid/plugins/protocol"
	"amid/plugins/taskspec"
)

// What -record trains: the lanes as a 10-minute run plans them for its first round (each
// lane trains about recordShare seconds there, with recordMin steps, the first guess the
// recorded curves then replace), in rounds that end at recordSteps, on the training slabs
// but every third, which validate.
var (
	recordSteps = []int{20, 40, 80, 120, 160, 200, 250, 300, 400}
	recordShare = 32.0
	recordMin   = 100
	recordSeeds = []int64{1}
)

// recordCurves trains every lane the plugin in bin plans for the task in dir, in rounds
// continuing from each other's checkpoints, scores each round on the validation slabs with
// the host's metric, and writes the curves to host/schedule/curves.json.
func recordCurves(ctx context.Context, dir, bin, work string) error {
	t, err := task.Load(filepath.Join(dir, "task.yaml"))
	if err != nil {
		return err
	}
	d, err := t.Resolve(dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	labels, err := ingest.Labels(ctx, t, d.Train, filepath.Join(work, "labels"))
	if err != nil {
		return err
	}
	fp, _, err := profile.Profile(ctx, t, d, labels)
	if err != nil {
		return err
	}
	fpJSON, err := json.Marshal(fp)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(work, "amid.db")); err != nil {
		return err
	}
	st, err := store.Open(filepath.Join(work, "amid.db"), 0)
	if err != nil {
		return err
	}
	defer st.Close()
	cat := &catalog.Catalog{Builtin: filepath.Join(bin, "plugins"), Store: st}
	entry, err := cat.Find("segmentation")
	if err != nil {
		return err
	}
	if err := cat.Trust(entry); err != nil {
		return err
	}
	opts := supervisor.Options{Logger: hclog.NewNullLogger()}
	spec := t.Spec()
	spec.LaneSeconds, spec.TrainSeconds, spec.MinSteps = recordShare, 10*recordShare, map[string]int{"": recordMin}
	sp, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	pt := protocol.Task{Kind: t.Kind, Dims: t.Dims, Metric: t.Metric.Name, Spec: sp}
	p, err := supervisor.Start(ctx, entry, opts)
	if err != nil {
		return err
	}
	plan, err := p.Plan(ctx, &protocol.PlanRequest{Fingerprint: fpJSON, Task: pt})
	p.Kill()
	if err != nil {
		return err
	}
	var train, val []protocol.Case
	for i, c := range d.Train {
		pc := protocol.Case{ID: c.ID, Images: c.Images, Label: labels[c.ID]}
		if i%3 == 1 {
			val = append(val, pc)
		} else {
			train = append(train, pc)
		}
	}
	out := schedule.Curves{Recorded: fmt.Sprintf("make bench-quality -record on %s: the lanes the segmentation plugin plans for a %.0f s first round (minimum %d steps) on the t1-tissue task, trained in rounds on %d slabs and scored on %d",
		time.Now().Format("2006-01-02"), recordShare, recordMin, len(train), len(val))}
	if err := st.CreateRun(&store.Run{ID: "record", Created: time.Now().UTC(), Task: t.ID}); err != nil {
		return err
	}
	sup := &supervisor.Supervisor{Store: st, Opts: opts}
	for _, c := range plan.Candidates {
		for _, seed := range recordSeeds {
			cv := schedule.Curve{Task: t.ID, Kind: t.Kind, Lane: c.Name, Seed: seed, StepSeconds: c.StepSeconds}
			resume := ""
			began := time.Now()
			for r, until := range recordSteps {
				wd := filepath.Join(work, c.Name, fmt.Sprintf("s%d", seed), fmt.Sprintf("r%d", r))
				rec, err := sup.RunLane(ctx, &supervisor.Lane{RunID: "record", ID: fmt.Sprintf("%s.s%d.r%d", c.Name, seed, r), Entry: entry, Request: protocol.TrainRequest{
					Task: pt, Config: c.Config, Train: train, Validation: val, WorkDir: wd, ResumeFrom: resume, Seed: seed, Until: int64(until),
				}})
				if err != nil {
					return fmt.Errorf("%s: %w", c.Name, err)
				}
				resume = rec.Checkpoint
				pred, err := (&predict.Predictor{Entry: entry, Opts: opts, Task: t}).One(ctx, c.Config, rec.Checkpoint, tasksOf(val), filepath.Join(wd, "val"))
				if err != nil {
					return err
				}
				var pairs []evaluate.Pair
				for _, v := range val {
					pairs = append(pairs, evaluate.Pair{ID: v.ID, Pred: pred.Files[v.ID][0], Label: v.Label})
				}
				s, err := evaluate.Evaluate(ctx, &taskspec.Spec{Kind: taskspec.Segmentation, Dims: 3}, pairs)
				if err != nil {
					return err
				}
				cv.Points = append(cv.Points, schedule.Point{Step: int(rec.Step), Score: s.Value, Seconds: time.Since(began).Seconds()})
				fmt.Printf("record %s seed %d: step %d validation Dice %.4f (%.0f s)\n", c.Name, seed, rec.Step, s.Value, time.Since(began).Seconds())
			}
			out.Curves = append(out.Curves, cv)
		}
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join("host", "schedule", "curves.json"), append(b, '\n'), 0o644)
}

// tasksOf are the protocol's cases as the task package's.
func tasksOf(cs []protocol.Case) []task.Case {
	out := make([]task.Case, len(cs))
	for i, c := range cs {
		out[i] = task.Case{ID: c.ID, Images: c.Images}
	}
	return out
}
