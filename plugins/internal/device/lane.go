package device

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"amid/plugins/engine"
	"amid/plugins/internal/training"
	"amid/plugins/protocol"
	"amid/plugins/sdk"
)

// Shrink returns a smaller plan of a lane that did not fit its device's memory and a few
// words saying what changed ("batch 4 → 2"), or ok false when nothing smaller is left.
type Shrink[C any] func(C) (smaller C, what string, ok bool)

// TrainFunc trains a lane with configuration cfg on be from the checkpoint resume ("" for
// a fresh start) and returns its newest checkpoint ("" when it wrote none) with its error.
// It frees what it holds on the device before returning.
type TrainFunc[C any] func(be engine.Backend, cfg C, resume string) (last string, err error)

// Train runs train on the setting's backend ([Open]) and recovers from its device's
// failures, each told to log in one sentence:
//
//   - out of device memory (engine.ErrOutOfDeviceMemory, which a network's build or a
//     trainer's reports): the lane is re-planned smaller once (shrink) and trained again; a
//     second failure, or no smaller plan, ends it with one sentence (ErrNoFit);
//   - a lost device (engine.ErrDeviceLost), or a network the device has no programs for
//     (engine.ErrNotOnDevice: a layer without a Vulkan implementation): the lane goes on
//     on the CPU from its newest checkpoint.
//
// It returns the backend that finished the lane, whose identity is what trained the
// final checkpoint.
func Train[C any](workers int, log Log, cfg C, resume string, shrink Shrink[C], train TrainFunc[C]) (engine.Backend, error) {
	log = log.orNone()
	be := Open(workers, log)
	shrunk := ""
	for {
		last, err := train(be, cfg, resume)
		if err == nil || !OnDevice(be) {
			return be, err
		}
		where := Name(be)
		switch {
		case errors.Is(err, engine.ErrOutOfDeviceMemory) && shrunk == "":
			smaller, what, ok := shrink(cfg)
			if !ok {
				return be, fmt.Errorf("the lane %w of %s and cannot be planned smaller: %v", ErrNoFit, where, err)
			}
			log(fmt.Sprintf("the lane does not fit the memory of %s, so it is re-planned smaller (%s)", where, what))
			cfg, shrunk = smaller, what
		case errors.Is(err, engine.ErrOutOfDeviceMemory):
			return be, fmt.Errorf("the lane %w of %s even re-planned smaller (%s): %v", ErrNoFit, where, shrunk, err)
		case errors.Is(err, engine.ErrDeviceLost), errors.Is(err, engine.ErrNotOnDevice):
			from := "from its start"
			if last != "" {
				resume, from = last, "from checkpoint "+last
			}
			what := "was lost while training"
			if !errors.Is(err, engine.ErrDeviceLost) {
				what = "cannot run this lane's network"
			}
			log(fmt.Sprintf("%s %s (%v), so the lane goes on on the CPU %s", where, what, err, from))
			be = engine.NewCPU(be.Workers())
		default:
			return be, err
		}
	}
}

// Predict runs predict on the setting's backend and, when its device runs out of memory,
// is lost or has no programs for the network, again on the CPU (log gets one sentence). It returns the backend that made
// the predictions.
func Predict(workers int, log Log, predict func(be engine.Backend) error) (engine.Backend, error) {
	log = log.orNone()
	be := Open(workers, log)
	err := predict(be)
	if err == nil || !OnDevice(be) || !(errors.Is(err, engine.ErrOutOfDeviceMemory) || errors.Is(err, engine.ErrDeviceLost) || errors.Is(err, engine.ErrNotOnDevice)) {
		return be, err
	}
	log(fmt.Sprintf("%s failed while predicting (%v), so the CPU predicts", Name(be), err))
	be = engine.NewCPU(be.Workers())
	return be, predict(be)
}

// orNone is log, or a Log that drops the sentences when log is nil.
func (log Log) orNone() Log {
	if log == nil {
		return func(string) {}
	}
	return log
}

// Progress carries a training lane's progress events to the host when the lane may start
// over from an earlier checkpoint (on the CPU after its device was lost): events before
// the furthest step already sent are held back, since the host refuses progress that goes
// back, and the sentences logged (Log) go out with the next event sent, besides the
// plugin's log.
type Progress struct {
	send    func(*protocol.Progress) error
	mu      sync.Mutex
	high    int64
	started bool
	pending []string
}

// NewProgress wraps a Train call's report function.
func NewProgress(send func(*protocol.Progress) error) *Progress { return &Progress{send: send} }

// Send sends e unless it is behind the furthest step sent, with the sentences logged
// since the last event sent in its message.
func (p *Progress) Send(e *protocol.Progress) error {
	p.mu.Lock()
	if p.started && e.Step < p.high {
		p.mu.Unlock()
		return nil
	}
	p.started, p.high = true, e.Step
	if len(p.pending) > 0 {
		q := *e
		q.Message = strings.Join(append(p.pending, e.Message), "; ")
		q.Message = strings.TrimSuffix(q.Message, "; ")
		e = &q
		p.pending = nil
	}
	p.mu.Unlock()
	return p.send(e)
}

// Log writes the sentence to the plugin's log (ToLog) and queues it for the next progress
// event.
func (p *Progress) Log(sentence string) {
	ToLog(sentence)
	p.mu.Lock()
	p.pending = append(p.pending, sentence)
	p.mu.Unlock()
}

// HalveBatch is the Shrink of a lane whose configuration's batch (the field batch points
// to) is halved, down to one.
func HalveBatch[C any](batch func(*C) *int) Shrink[C] {
	return func(c C) (C, string, bool) {
		b := batch(&c)
		if *b < 2 {
			return c, "", false
		}
		what := fmt.Sprintf("batch %d → %d", *b, *b/2)
		*b /= 2
		return c, what, true
	}
}

// Result is the train result of a lane's final checkpoint at step with its validation
// figures, computed by be.
func Result(be engine.Backend, final string, step int64, val map[string]float64) (*protocol.TrainResult, error) {
	res, err := sdk.Result(final, step, val)
	if err != nil {
		return nil, err
	}
	res.Compute = be.Identity()
	return res, nil
}

// PredictCases predicts cases, in order, with the model open loads on the setting's
// backend (and on the CPU after the device failed, as [Predict] does): each writes one
// case's prediction files and returns their paths. The response carries the identity of
// the backend that made them; an error is the plugin's ("segmentation predict: …"), or the
// context's when it was cancelled.
func PredictCases[M interface{ Close() }](ctx context.Context, plugin string, cases []protocol.Case, open func(engine.Backend) (M, error), each func(M, protocol.Case) (protocol.Prediction, error)) (*protocol.PredictResponse, error) {
	return predictCases(ctx, plugin, cases, func(f func(engine.Backend) error) (engine.Backend, error) { return Predict(0, ToLog, f) }, open, each)
}

// PredictCasesCPU is [PredictCases] on the CPU whatever the setting: for a model that
// computes on the CPU alone (the segmentation plugin's forest), whose identity is the CPU's.
func PredictCasesCPU[M interface{ Close() }](ctx context.Context, plugin string, cases []protocol.Case, open func(engine.Backend) (M, error), each func(M, protocol.Case) (protocol.Prediction, error)) (*protocol.PredictResponse, error) {
	return predictCases(ctx, plugin, cases, func(f func(engine.Backend) error) (engine.Backend, error) {
		be := CPU()
		return be, f(be)
	}, open, each)
}

// CPU is the CPU backend with the workers the setting's backend would have.
func CPU() engine.Backend { return engine.NewCPU(runtime.GOMAXPROCS(0)) }

// predictCases is PredictCases with on running the predictions on a backend.
func predictCases[M interface{ Close() }](ctx context.Context, plugin string, cases []protocol.Case, on func(func(engine.Backend) error) (engine.Backend, error), open func(engine.Backend) (M, error), each func(M, protocol.Case) (protocol.Prediction, error)) (*protocol.PredictResponse, error) {
	var out *protocol.PredictResponse
	be, err := on(func(be engine.Backend) error {
		m, err := open(be)
		if err != nil {
			return err
		}
		defer m.Close()
		out = &protocol.PredictResponse{}
		for _, c := range cases {
			if err := ctx.Err(); err != nil {
				return err
			}
			p, err := each(m, c)
			if err != nil {
				return err
			}
			p.CaseID = c.ID
			out.Predictions = append(out.Predictions, p)
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s predict: %w", plugin, err)
	}
	out.Compute = be.Identity()
	return out, nil
}

// TrainLoop trains a lane whose train runs a training.Loop (on the setting's backend, with
// Train's recovery), validates its final checkpoint on req's validation cases when there
// are any, and makes the result; errors are the plugin's ("segmentation train: …").
func TrainLoop[C any](plugin string, log Log, cfg C, req *protocol.TrainRequest, shrink Shrink[C],
	train func(be engine.Backend, cfg C, resume string) (*training.Loop, error),
	validate func(final string, cases []protocol.Case) (map[string]float64, error)) (*protocol.TrainResult, error) {
	var l *training.Loop
	be, err := Train(0, log, cfg, req.ResumeFrom, shrink, func(be engine.Backend, cfg C, resume string) (string, error) {
		var err error
		if l, err = train(be, cfg, resume); l == nil {
			return "", err
		}
		return l.Last, err
	})
	if err != nil {
		return nil, fmt.Errorf("%s train: %w", plugin, err)
	}
	var val map[string]float64
	if len(req.Validation) > 0 {
		if val, err = validate(l.Last, req.Validation); err != nil {
			return nil, fmt.Errorf("%s train: validation: %w", plugin, err)
		}
	}
	return Result(be, l.Last, int64(l.At.Step), val)
}
