package sdk

import (
	"context"
	"time"

	"amid/plugins/protocol"
)

// CancelWait is the longest Stream waits for the step in flight after a cancel; the
// protocol allows 2 s before the host kills the plugin.
const CancelWait = 1500 * time.Millisecond

type event struct {
	p   *protocol.Progress
	res *protocol.TrainResult
	err error
}

// Stream runs train on its own goroutine and hands every progress event it sends to
// report, so that a cancel returns at once whatever the step in flight: Stream then waits
// up to CancelWait for train to end (so that no checkpoint is half written) and returns the
// context's error. send returns the context's error once cancelled. A plugin's Train is
// typically:
//
//	return sdk.Stream(ctx, report, func(ctx context.Context, send func(*protocol.Progress) error) (*protocol.TrainResult, error) {
//		// steps, send(progress), checkpoints, validation
//	})
func Stream(ctx context.Context, report func(*protocol.Progress) error,
	train func(ctx context.Context, send func(*protocol.Progress) error) (*protocol.TrainResult, error)) (*protocol.TrainResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := make(chan event)
	finished := make(chan struct{})
	send := func(p *protocol.Progress) error {
		select {
		case events <- event{p: p}:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	go func() {
		defer close(finished)
		res, err := train(ctx, send)
		select {
		case events <- event{res: res, err: err}:
		case <-ctx.Done():
		}
	}()
	for {
		select {
		case <-ctx.Done():
			select {
			case <-finished:
			case <-time.After(CancelWait):
			}
			return nil, ctx.Err()
		case e := <-events:
			if e.p == nil {
				if e.err != nil && ctx.Err() != nil {
					return nil, ctx.Err()
				}
				return e.res, e.err
			}
			if err := report(e.p); err != nil {
				return nil, err
			}
		}
	}
}
