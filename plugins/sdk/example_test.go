package sdk_test

import (
	"context"
	"errors"
	"path/filepath"

	"amid/plugins/protocol"
	"amid/plugins/sdk"
)

// tiny is the smallest useful plugin: one candidate, a training loop that reports progress
// and writes a checkpoint, and a Predict that is not implemented yet.
type tiny struct{}

func (tiny) Describe(context.Context, *protocol.DescribeRequest) (*protocol.DescribeResponse, error) {
	return &protocol.DescribeResponse{
		Name: "tiny", Version: "0.1.0", ProtocolVersion: protocol.Version,
		Tasks:        []protocol.TaskKind{{Kind: "classification", Dims: []int{2}}},
		Metrics:      []string{"auc"},
		ConfigSchema: []byte(`{"type":"object"}`),
		Hardware:     []string{"cpu"},
	}, nil
}

func (tiny) Plan(context.Context, *protocol.PlanRequest) (*protocol.PlanResponse, error) {
	return &protocol.PlanResponse{Candidates: []protocol.Candidate{{Name: "default", Config: []byte(`{}`)}}}, nil
}

func (tiny) Train(ctx context.Context, req *protocol.TrainRequest, report func(*protocol.Progress) error) (*protocol.TrainResult, error) {
	for step := int64(1); step <= 100; step++ {
		if err := ctx.Err(); err != nil {
			return nil, err // cancelled: stop at once, checkpoints stay on disk
		}
		if err := report(&protocol.Progress{Step: step, TotalSteps: 100, Losses: map[string]float64{"bce": 1 / float64(step)}}); err != nil {
			return nil, err
		}
	}
	path := filepath.Join(req.WorkDir, "final.ckpt")
	if _, err := sdk.WriteFile(path, []byte("weights")); err != nil {
		return nil, err
	}
	return sdk.Result(path, 100, nil)
}

func (tiny) Predict(context.Context, *protocol.PredictRequest) (*protocol.PredictResponse, error) {
	return nil, errors.New("tiny cannot predict yet")
}

// A plugin's main function serves its implementation; go build -o amid-plugin-tiny.
func ExampleServe() {
	sdk.Serve(tiny{})
}
