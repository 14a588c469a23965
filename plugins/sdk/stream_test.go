package sdk

import (
	"context"
	"errors"
	"testing"
	"time"

	"amid/plugins/protocol"
)

func TestStreamForwardsAndFinishes(t *testing.T) {
	var got []int64
	res, err := Stream(context.Background(), func(p *protocol.Progress) error {
		got = append(got, p.Step)
		return nil
	}, func(ctx context.Context, send func(*protocol.Progress) error) (*protocol.TrainResult, error) {
		for s := int64(1); s <= 3; s++ {
			if err := send(&protocol.Progress{Step: s, TotalSteps: 3}); err != nil {
				return nil, err
			}
		}
		return &protocol.TrainResult{Steps: 3}, nil
	})
	if err != nil || res.Steps != 3 || len(got) != 3 {
		t.Errorf("result %+v, err %v, progress %v", res, err, got)
	}
}

func TestStreamReportErrorStops(t *testing.T) {
	gone := errors.New("host gone")
	_, err := Stream(context.Background(), func(*protocol.Progress) error { return gone },
		func(ctx context.Context, send func(*protocol.Progress) error) (*protocol.TrainResult, error) {
			for {
				if err := send(&protocol.Progress{Step: 1}); err != nil {
					return nil, err
				}
			}
		})
	if !errors.Is(err, gone) {
		t.Errorf("err %v, want the report's error", err)
	}
}

// TestStreamCancelDoesNotWaitForTheStep checks that a cancel returns within CancelWait
// even when the step in flight takes far longer.
func TestStreamCancelDoesNotWaitForTheStep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	defer close(release)
	done := make(chan error, 1)
	go func() {
		_, err := Stream(ctx, func(*protocol.Progress) error { return nil },
			func(ctx context.Context, send func(*protocol.Progress) error) (*protocol.TrainResult, error) {
				<-release // a step that ignores the context
				return nil, nil
			})
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err %v, want context.Canceled", err)
		}
	case <-time.After(time.Minute): // CancelWait is 1.5 s; a minute means it hung
		t.Fatal("Stream did not return after a cancel")
	}
}
