package protocol

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"amid/plugins/protocol/internal/pb"
)

// GRPCPlugin is the go-plugin glue for a task plugin. A plugin sets Impl and serves it
// (amid/plugins/sdk does this); the host leaves Impl nil and dispenses a [Plugin] client.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl Plugin
}

// PluginSet is the go-plugin plugin set for a host (impl nil) or a plugin.
func PluginSet(impl Plugin) plugin.PluginSet {
	return plugin.PluginSet{PluginName: &GRPCPlugin{Impl: impl}}
}

// GRPCServer registers the plugin's implementation on s.
func (p *GRPCPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return errors.New("protocol: GRPCPlugin served without an implementation")
	}
	pb.RegisterTaskPluginServer(s, &server{impl: p.Impl})
	return nil
}

// GRPCClient returns a [Plugin] that calls the plugin process over conn.
func (p *GRPCPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return &client{c: pb.NewTaskPluginClient(conn)}, nil
}

// server adapts a Plugin to the generated gRPC service.
type server struct {
	pb.UnimplementedTaskPluginServer
	impl Plugin
}

func (s *server) Describe(ctx context.Context, _ *pb.DescribeRequest) (*pb.DescribeResponse, error) {
	r, err := s.impl.Describe(ctx, &DescribeRequest{})
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, errors.New("plugin returned no description")
	}
	return describeToPB(r), nil
}

func (s *server) Plan(ctx context.Context, req *pb.PlanRequest) (*pb.PlanResponse, error) {
	r, err := s.impl.Plan(ctx, planRequestFromPB(req))
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, errors.New("plugin returned no plan")
	}
	return planToPB(r), nil
}

func (s *server) Train(req *pb.TrainRequest, stream grpc.ServerStreamingServer[pb.TrainEvent]) error {
	report := func(p *Progress) error {
		return stream.Send(&pb.TrainEvent{Event: &pb.TrainEvent_Progress{Progress: progressToPB(p)}})
	}
	r, err := s.impl.Train(stream.Context(), trainRequestFromPB(req), report)
	if err != nil {
		return err
	}
	if r == nil {
		return errors.New("plugin returned no training result")
	}
	return stream.Send(&pb.TrainEvent{Event: &pb.TrainEvent_Result{Result: resultToPB(r)}})
}

func (s *server) Predict(ctx context.Context, req *pb.PredictRequest) (*pb.PredictResponse, error) {
	r, err := s.impl.Predict(ctx, predictRequestFromPB(req))
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, errors.New("plugin returned no predictions")
	}
	return predictToPB(r), nil
}

// client is the host's Plugin over a gRPC connection.
type client struct {
	c pb.TaskPluginClient
}

func (c *client) Describe(ctx context.Context, _ *DescribeRequest) (*DescribeResponse, error) {
	r, err := c.c.Describe(ctx, &pb.DescribeRequest{})
	if err != nil {
		return nil, err
	}
	return describeFromPB(r), nil
}

func (c *client) Plan(ctx context.Context, req *PlanRequest) (*PlanResponse, error) {
	r, err := c.c.Plan(ctx, planRequestToPB(req))
	if err != nil {
		return nil, err
	}
	return planFromPB(r), nil
}

// Train calls report for each progress event and returns the final result. A stream that
// ends without a result returns an error wrapping ErrIncomplete; progress after the result
// is ErrMalformed.
func (c *client) Train(ctx context.Context, req *TrainRequest, report func(*Progress) error) (*TrainResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.c.Train(ctx, trainRequestToPB(req))
	if err != nil {
		return nil, err
	}
	var result *TrainResult
	for {
		ev, err := stream.Recv()
		if err == io.EOF {
			if result == nil {
				return nil, ErrIncomplete
			}
			return result, nil
		}
		if err != nil {
			if result != nil {
				return result, nil // the result arrived; a later transport error does not undo it
			}
			return nil, fmt.Errorf("%w: %w", ErrIncomplete, err)
		}
		if result != nil {
			return nil, fmt.Errorf("%w: an event followed the final result", ErrMalformed)
		}
		switch e := ev.GetEvent().(type) {
		case *pb.TrainEvent_Progress:
			if report != nil {
				if err := report(progressFromPB(e.Progress)); err != nil {
					return nil, err
				}
			}
		case *pb.TrainEvent_Result:
			result = resultFromPB(e.Result)
		default:
			return nil, fmt.Errorf("%w: a training event with neither progress nor result", ErrMalformed)
		}
	}
}

func (c *client) Predict(ctx context.Context, req *PredictRequest) (*PredictResponse, error) {
	r, err := c.c.Predict(ctx, predictRequestToPB(req))
	if err != nil {
		return nil, err
	}
	return predictFromPB(r), nil
}
