package main

import (
	"context"
	"encoding/json"
	"fmt"

	"amid/plugins/engine"
	"amid/plugins/engine/ckpt"
	"amid/plugins/internal/cnn"
	"amid/plugins/internal/device"
	"amid/plugins/internal/imageplugin"
	"amid/plugins/protocol"
	"amid/plugins/sdk"
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
	p := &predictor{}
	if err := imageplugin.ReadRecord(path, &p.rec); err != nil {
		return nil, err
	}
	b, err := json.Marshal(p.rec.Config)
	if err != nil {
		return nil, err
	}
	c, err := parseConfig(b, p.rec.Dims)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	p.rec.Config = c
	r := p.rec.Range
	switch {
	case p.rec.Channels < 1:
		return nil, fmt.Errorf("checkpoint %s: %d image channels", path, p.rec.Channels)
	case p.rec.Members < 1 || p.rec.Members > c.Folds:
		return nil, fmt.Errorf("checkpoint %s: %d trained models of %d", path, p.rec.Members, c.Folds)
	case !(r.Max > r.Min) || r.Step < 0:
		return nil, fmt.Errorf("checkpoint %s: score range [%g, %g] step %g", path, r.Min, r.Max, r.Step)
	}
	arch := c.Arch(p.rec.Channels, 1)
	if p.model, err = cnn.Build(be, arch, 1, c.Grid, 1, nil); err != nil {
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
	)
	be, err := device.Predict(0, device.ToLog, func(be engine.Backend) error {
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
	})
	if err != nil {
		return nil, fmt.Errorf("iqa predict: %w", err)
	}
	out := &protocol.PredictResponse{Compute: be.Identity()}
	for i, k := range req.Cases {
		v := rec.output(scores[i])
		b, err := (&taskspec.Annotation{Score: &v}).Marshal()
		if err != nil {
			return nil, err
		}
		if _, err := sdk.WriteFile(paths[i], b); err != nil {
			return nil, fmt.Errorf("iqa predict: case %s: %w", k.ID, err)
		}
		out.Predictions = append(out.Predictions, protocol.Prediction{CaseID: k.ID, Files: []string{paths[i]}})
	}
	return out, nil
}
