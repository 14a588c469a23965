package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"amid/plugins/engine"
	"amid/plugins/engine/ckpt"
	"amid/plugins/internal/cnn"
	"amid/plugins/internal/device"
	"amid/plugins/internal/imageplugin"
	"amid/plugins/protocol"
	"amid/plugins/taskspec"
)

// predictor predicts scores with the models of a checkpoint.
type predictor struct {
	rec     saved
	model   *cnn.Model
	members []cnn.Member
}

// load reads a checkpoint: the record and every trained model, on one network rebuilt on
// be for one image at a time.
func load(be engine.Backend, path string) (*predictor, error) {
	man, err := ckpt.ReadManifest(path)
	if err != nil {
		return nil, err
	}
	rec, err := parseRecord(path, man.Train)
	if err != nil {
		return nil, err
	}
	p := &predictor{rec: *rec}
	c := rec.Config
	switch {
	case c.Lane != laneCNN:
		return nil, fmt.Errorf("checkpoint %s: a %s lane's, not a network's", path, c.Lane)
	case p.rec.Channels < 1:
		return nil, fmt.Errorf("checkpoint %s: %d image channels", path, p.rec.Channels)
	case p.rec.Members < 1 || p.rec.Members > c.Folds:
		return nil, fmt.Errorf("checkpoint %s: %d trained models of %d", path, p.rec.Members, c.Folds)
	}
	arch := c.Arch(p.rec.Channels, 1)
	if p.model, err = cnn.Build(be, arch, 1, c.Grid, 1, nil, engine.ForInference); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	ens := &cnn.Ensemble{}
	for range c.Folds {
		ens.Members = append(ens.Members, cnn.Zero(p.model.Net))
	}
	if _, err := ckpt.Load(path, arch.UNet(), ens, nil); err != nil {
		p.model.Close()
		return nil, err
	}
	p.members = ens.Members[:p.rec.Members]
	return p, nil
}

// parseRecord decodes the training record raw of the checkpoint at path and checks what
// every lane's prediction relies on: its configuration (defaults filled) and its score
// range.
func parseRecord(path string, raw []byte) (*saved, error) {
	rec := &saved{}
	if err := json.Unmarshal(raw, rec); err != nil {
		return nil, fmt.Errorf("checkpoint %s: training record: %w", path, err)
	}
	b, err := json.Marshal(rec.Config)
	if err != nil {
		return nil, err
	}
	if rec.Config, err = parseConfig(b, rec.Dims); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	r := rec.Range
	if !(r.Max > r.Min) || r.Step < 0 || math.IsInf(r.Min, 0) || math.IsInf(r.Max, 0) || math.IsInf(r.Step, 0) {
		return nil, fmt.Errorf("checkpoint %s: score range [%g, %g] step %g", path, r.Min, r.Max, r.Step)
	}
	return rec, nil
}

// predict normalises imgs in place and returns the mean of the models' predictions in
// score units, neither clamped nor snapped.
func (p *predictor) predict(imgs []*cnn.Image) ([]float64, error) {
	for _, im := range imgs {
		if im.C != p.rec.Channels {
			return nil, fmt.Errorf("%w: %d channels, the model was trained on %d", cnn.ErrImage, im.C, p.rec.Channels)
		}
		if err := p.rec.Intensity.Apply(im); err != nil {
			return nil, err
		}
	}
	sum := make([]float64, len(imgs))
	for _, m := range p.members {
		if err := m.CopyInto(p.model.Net); err != nil {
			return nil, err
		}
		if err := p.model.ToDevice(); err != nil {
			return nil, err
		}
		if err := cnn.Infer(p.model, imgs, func(i int, y []float32) { sum[i] += float64(y[0]) }); err != nil {
			return nil, err
		}
	}
	for i := range sum {
		sum[i] = p.rec.unscale(sum[i] / float64(len(p.members)))
	}
	return sum, nil
}

// Close frees the network's device memory (nothing on the CPU).
func (p *predictor) Close() { p.model.Close() }

func (iqa) Predict(ctx context.Context, req *protocol.PredictRequest) (*protocol.PredictResponse, error) {
	paths := make([]string, len(req.Cases))
	for i, k := range req.Cases {
		if len(k.Images) == 0 {
			return nil, fmt.Errorf("iqa predict: case %s has no image file", k.ID)
		}
		var err error
		if paths[i], err = imageplugin.OutPath(req.OutputDir, k.ID); err != nil {
			return nil, fmt.Errorf("iqa predict: %w", err)
		}
	}
	var (
		scores []float64
		rec    saved
		be     engine.Backend
	)
	man, err := ckpt.ReadManifest(req.Checkpoint)
	if err != nil {
		return nil, fmt.Errorf("iqa predict: %w", err)
	}
	if r, err := parseRecord(req.Checkpoint, man.Train); err == nil && r.Config.Lane == laneForest {
		var fr *saved
		if scores, fr, err = predictForest(ctx, req.Checkpoint, req.Cases); err != nil {
			return nil, fmt.Errorf("iqa predict: %w", err)
		}
		rec, be = *fr, device.CPU() // the forest computes on the CPU
	} else if be, err = device.Predict(0, device.ToLog, func(be engine.Backend) error {
		p, err := load(be, req.Checkpoint)
		if err != nil {
			return err
		}
		defer p.Close()
		rec = p.rec
		imgs, err := imageplugin.LoadImages(ctx, req.Cases, p.rec.Dims, p.rec.Config.Net, p.rec.Channels)
		if err != nil {
			return err
		}
		scores, err = p.predict(imgs)
		return err
	}); err != nil {
		return nil, fmt.Errorf("iqa predict: %w", err)
	}
	out := &protocol.PredictResponse{Compute: be.Identity()}
	for i, k := range req.Cases {
		v := rec.output(scores[i])
		if err := (&taskspec.Annotation{Score: &v}).WriteFile(paths[i]); err != nil {
			return nil, fmt.Errorf("iqa predict: case %s: %w", k.ID, err)
		}
		out.Predictions = append(out.Predictions, protocol.Prediction{CaseID: k.ID, Files: []string{paths[i]}})
	}
	return out, nil
}
