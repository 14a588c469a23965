// Command amid-plugin-echo is the example and template AMID task plugin. Its "model" is
// the mean byte value of the training images; a prediction marks each byte of a case's
// first image that lies above that mean. It shows every part of the protocol: a config
// schema, a plan, training with progress, periodic and final checkpoints, resume,
// training in rounds (TrainRequest.Until), cancellation and prediction files.
//
// Copy this folder to start a new plugin; see plugins/README.md.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"amid/plugins/protocol"
	"amid/plugins/sdk"
)

func main() { sdk.Serve(&echo{}) }

type echo struct{}

// config is the plugin's configuration; schema below describes it.
type config struct {
	Steps           int64 `json:"steps"`
	StepMS          int64 `json:"step_ms"`
	CheckpointEvery int64 `json:"checkpoint_every"`
}

const schema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "steps": {"type": "integer", "minimum": 1, "maximum": 1000000},
    "step_ms": {"type": "integer", "minimum": 0, "maximum": 60000},
    "checkpoint_every": {"type": "integer", "minimum": 1}
  },
  "required": ["steps"],
  "additionalProperties": false
}`

// checkpoint is what a checkpoint file holds.
type checkpoint struct {
	Step int64   `json:"step"`
	Mean float64 `json:"mean"`
}

func (echo) Describe(context.Context, *protocol.DescribeRequest) (*protocol.DescribeResponse, error) {
	return &protocol.DescribeResponse{
		Name:            "echo",
		Version:         "1.0.0",
		ProtocolVersion: protocol.Version,
		Tasks:           []protocol.TaskKind{{Kind: "segmentation", Dims: []int{2, 3}}},
		Metrics:         []string{"dice"},
		ConfigSchema:    []byte(schema),
		Hardware:        []string{"cpu"},
	}, nil
}

func (echo) Plan(_ context.Context, req *protocol.PlanRequest) (*protocol.PlanResponse, error) {
	if req.Task.Kind != "segmentation" {
		return nil, fmt.Errorf("echo plans segmentation tasks only, not %q", req.Task.Kind)
	}
	return &protocol.PlanResponse{Candidates: []protocol.Candidate{
		{Name: "quick", Config: []byte(`{"steps":20,"step_ms":5,"checkpoint_every":5}`), Rationale: "a short run to check the data"},
		{Name: "long", Config: []byte(`{"steps":200,"step_ms":5,"checkpoint_every":50}`), Rationale: "more steps"},
	}}, nil
}

func parseConfig(b []byte) (config, error) {
	c := config{Steps: 20, CheckpointEvery: 10}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("echo configuration: %w", err)
	}
	if c.Steps < 1 || c.CheckpointEvery < 1 {
		return c, fmt.Errorf("echo configuration: steps and checkpoint_every must be positive")
	}
	return c, nil
}

// meanByte is the mean byte value of the first image of each case.
func meanByte(cases []protocol.Case) (float64, error) {
	var sum, n float64
	for _, c := range cases {
		if len(c.Images) == 0 {
			return 0, fmt.Errorf("case %s has no image", c.ID)
		}
		b, err := os.ReadFile(c.Images[0])
		if err != nil {
			return 0, fmt.Errorf("case %s: %w", c.ID, err)
		}
		for _, v := range b {
			sum += float64(v)
		}
		n += float64(len(b))
	}
	if n == 0 {
		return 0, fmt.Errorf("the training images are empty")
	}
	return sum / n, nil
}

func writeCheckpoint(path string, ck checkpoint) (string, error) {
	b, _ := json.Marshal(ck)
	return sdk.WriteFile(path, b)
}

func (echo) Train(ctx context.Context, req *protocol.TrainRequest, report func(*protocol.Progress) error) (*protocol.TrainResult, error) {
	cfg, err := parseConfig(req.Config)
	if err != nil {
		return nil, err
	}
	mean, err := meanByte(req.Train)
	if err != nil {
		return nil, err
	}
	start := int64(0)
	if req.ResumeFrom != "" {
		b, err := os.ReadFile(req.ResumeFrom)
		if err != nil {
			return nil, fmt.Errorf("resume: %w", err)
		}
		var ck checkpoint
		if err := json.Unmarshal(b, &ck); err != nil {
			return nil, fmt.Errorf("resume from %s: %w", req.ResumeFrom, err)
		}
		start = ck.Step
	}
	began := time.Now()
	clock := sdk.NewClock(req)
	last := start
	end := cfg.Steps // the last step of this request: Until stops a round earlier
	if req.Until > 0 {
		end = min(req.Until, cfg.Steps)
	}
	for step := start + 1; step <= end; step++ {
		if clock.Expired() {
			break // the host's time limit: finish normally
		}
		last = step
		if cfg.StepMS > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err() // the last checkpoint stays on disk
			case <-time.After(time.Duration(cfg.StepMS) * time.Millisecond):
			}
		} else if err := ctx.Err(); err != nil {
			return nil, err
		}
		p := &protocol.Progress{
			Step: step, TotalSteps: cfg.Steps, Epoch: step / 10,
			Losses: map[string]float64{"l1": 1 / float64(step)},
		}
		if elapsed := time.Since(began); elapsed > 0 {
			done := step - start
			p.SamplesPerSecond = float64(done) * float64(len(req.Train)) / elapsed.Seconds()
			p.ETA = time.Duration(float64(elapsed) / float64(done) * float64(cfg.Steps-step))
		}
		if step%cfg.CheckpointEvery == 0 {
			ck := filepath.Join(req.WorkDir, fmt.Sprintf("step-%06d.json", step))
			if _, err := writeCheckpoint(ck, checkpoint{Step: step, Mean: mean}); err != nil {
				return nil, err
			}
			p.Checkpoint = ck
		}
		if err := report(p); err != nil {
			return nil, err
		}
	}
	final := filepath.Join(req.WorkDir, "final.json")
	if _, err := writeCheckpoint(final, checkpoint{Step: last, Mean: mean}); err != nil {
		return nil, err
	}
	return sdk.Result(final, last, map[string]float64{"mean": mean})
}

func (echo) Predict(ctx context.Context, req *protocol.PredictRequest) (*protocol.PredictResponse, error) {
	b, err := os.ReadFile(req.Checkpoint)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	var ck checkpoint
	if err := json.Unmarshal(b, &ck); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", req.Checkpoint, err)
	}
	out := &protocol.PredictResponse{}
	for _, c := range req.Cases {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(c.Images) == 0 {
			return nil, fmt.Errorf("case %s has no image", c.ID)
		}
		img, err := os.ReadFile(c.Images[0])
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", c.ID, err)
		}
		mask := make([]byte, len(img))
		for i, v := range img {
			if float64(v) > ck.Mean {
				mask[i] = 1
			}
		}
		path := filepath.Join(req.OutputDir, c.ID+"_pred.raw")
		if _, err := sdk.WriteFile(path, mask); err != nil {
			return nil, err
		}
		out.Predictions = append(out.Predictions, protocol.Prediction{CaseID: c.ID, Files: []string{path}})
	}
	return out, nil
}
