package protocol_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"path/filepath"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"amid/plugins/protocol"
)

// constant is a plugin that predicts nothing useful: it trains in three steps and names a
// checkpoint. Real plugins serve themselves with amid/plugins/sdk.Serve.
type constant struct{}

func (constant) Describe(context.Context, *protocol.DescribeRequest) (*protocol.DescribeResponse, error) {
	return &protocol.DescribeResponse{
		Name: "constant", Version: "0.1.0", ProtocolVersion: protocol.Version,
		Tasks:        []protocol.TaskKind{{Kind: "segmentation", Dims: []int{3}}},
		Metrics:      []string{"dice"},
		ConfigSchema: []byte(`{"type":"object","properties":{"steps":{"type":"integer","minimum":1}}}`),
		Hardware:     []string{"cpu"},
	}, nil
}

func (constant) Plan(context.Context, *protocol.PlanRequest) (*protocol.PlanResponse, error) {
	return &protocol.PlanResponse{Candidates: []protocol.Candidate{{Name: "three-steps", Config: []byte(`{"steps":3}`)}}}, nil
}

func (constant) Train(_ context.Context, r *protocol.TrainRequest, report func(*protocol.Progress) error) (*protocol.TrainResult, error) {
	for step := int64(1); step <= 3; step++ {
		if err := report(&protocol.Progress{Step: step, TotalSteps: 3, Losses: map[string]float64{"loss": 1 / float64(step)}}); err != nil {
			return nil, err // the host has gone
		}
	}
	sum := "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" // sha256 of no bytes
	return &protocol.TrainResult{Checkpoint: filepath.Join(r.WorkDir, "final.ckpt"), SHA256: sum, Steps: 3}, nil
}

func (constant) Predict(_ context.Context, r *protocol.PredictRequest) (*protocol.PredictResponse, error) {
	out := &protocol.PredictResponse{}
	for _, c := range r.Cases {
		out.Predictions = append(out.Predictions, protocol.Prediction{CaseID: c.ID, Files: []string{filepath.Join(r.OutputDir, c.ID+".nii.gz")}})
	}
	return out, nil
}

// The contract over real gRPC, in one process: a plugin's implementation on the server
// side, the host's Plugin client on the other (go-plugin adds the process, the handshake
// and mutual TLS around this; amid/host/supervisor starts plugins that way). Images,
// checkpoints and predictions travel as paths; progress streams.
func Example() {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer()
	if err := (&protocol.GRPCPlugin{Impl: constant{}}).GRPCServer(nil, srv); err != nil {
		log.Fatal(err)
	}
	go srv.Serve(lis)
	defer srv.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	raw, err := (&protocol.GRPCPlugin{}).GRPCClient(context.Background(), nil, conn)
	if err != nil {
		log.Fatal(err)
	}
	p := raw.(protocol.Plugin)

	ctx := context.Background()
	d, err := p.Describe(ctx, &protocol.DescribeRequest{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.Name, d.Version, d.Tasks, d.Validate())
	res, err := p.Train(ctx, &protocol.TrainRequest{LaneID: "three-steps", WorkDir: "/work/lane"}, func(pr *protocol.Progress) error {
		fmt.Printf("step %d/%d loss %.3f\n", pr.Step, pr.TotalSteps, pr.Losses["loss"])
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Checkpoint, res.Steps, res.Validate())
	pr, err := p.Predict(ctx, &protocol.PredictRequest{OutputDir: "/work/out", Cases: []protocol.Case{{ID: "case1"}}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(pr.Predictions[0].Files)
	// Output:
	// constant 0.1.0 [{segmentation [3]}] <nil>
	// step 1/3 loss 1.000
	// step 2/3 loss 0.500
	// step 3/3 loss 0.333
	// /work/lane/final.ckpt 3 <nil>
	// [/work/out/case1.nii.gz]
}
