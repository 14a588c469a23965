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
	"amid/plugins/internal/forest"
	"amid/plugins/internal/imageplugin"
	"amid/plugins/protocol"
	"amid/plugins/taskspec"
)

// predictor predicts the classes of a case from a checkpoint.
type predictor struct {
	rec   saved
	model *cnn.Model // nil for the prior and the forest
	// forests are the forest lane's, one per attribute of rec.Forests.
	forests []*forest.Forest
}

// load reads a checkpoint: the record, and for the cnn lane the network rebuilt on be for
// one case at a time.
func load(be engine.Backend, path string) (*predictor, error) {
	p := &predictor{}
	if err := imageplugin.ReadRecord(path, &p.rec); err != nil {
		return nil, err
	}
	b, err := json.Marshal(p.rec.Config)
	if err != nil {
		return nil, err
	}
	if p.rec.Config, err = parseConfig(b, p.rec.Dims); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if (len(p.rec.Units) == 0 && p.rec.Multi == "") || p.rec.Prior == nil {
		return nil, fmt.Errorf("checkpoint %s: the training record has no attributes", path)
	}
	if p.rec.Config.Lane == laneForest {
		if p.forests, err = readForests(path, p.rec); err != nil {
			return nil, err
		}
		return p, nil
	}
	if p.rec.Config.Lane == lanePrior {
		if _, err := ckpt.Load(path, engine.UNetConfig{}, empty{}, nil); err != nil {
			return nil, err
		}
		return p, nil
	}
	outputs := 0
	for _, h := range p.rec.Heads {
		if len(h.Classes) < 2 {
			return nil, fmt.Errorf("checkpoint %s: head %s has %d classes", path, h.Name, len(h.Classes))
		}
		outputs += len(h.Classes)
	}
	if p.rec.Channels < 1 || outputs == 0 {
		return nil, fmt.Errorf("checkpoint %s: %d channels and %d outputs", path, p.rec.Channels, outputs)
	}
	arch := p.rec.Config.Arch(p.rec.Channels, outputs)
	if p.model, err = cnn.Build(be, arch, 1, p.rec.Config.Grid, 1, nil, engine.ForInference); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if _, err := ckpt.Load(path, arch.UNet(), p.model, nil); err != nil {
		p.model.Close()
		return nil, err
	}
	p.model.SetTraining(false)
	return p, nil
}

// classes predicts a case's class of every attribute, the probability of each of its
// classes (a head's softmax, summed over the head's classes that give the attribute each
// class; the prior lane's: the training labels' shares), and how sure the network is:
// the least, over its heads, of the chosen class's softmax probability (nil for the prior,
// which has no network).
func (p *predictor) classes(k protocol.Case) (map[string]int, map[string][]float64, *float64, error) {
	if len(k.Images) == 0 {
		return nil, nil, nil, fmt.Errorf("case %s has no image file", k.ID)
	}
	if p.forests != nil {
		return p.forestClasses(k)
	}
	if p.model == nil {
		return p.rec.Prior, p.priorProbs(), nil, nil
	}
	c := p.rec.Config
	im, err := cnn.Load(k.Images, p.rec.Dims, c.ROIXYZ(), c.GridXYZ())
	if err != nil {
		return nil, nil, nil, err
	}
	if im.C != p.rec.Channels {
		return nil, nil, nil, fmt.Errorf("%w: %d channels, the model was trained on %d", cnn.ErrImage, im.C, p.rec.Channels)
	}
	if err := p.rec.Intensity.Apply(im); err != nil {
		return nil, nil, nil, err
	}
	out := map[string]int{}
	probs := map[string][]float64{}
	conf := 1.0
	err = cnn.Infer(p.model, []*cnn.Image{im}, func(_ int, y []float32) {
		off := 0
		for _, h := range p.rec.Heads {
			best := 0
			for k := range h.Classes {
				if y[off+k] > y[off+best] {
					best = k
				}
			}
			for i, a := range h.Attrs {
				if !h.Multi {
					out[a] = h.Classes[best][i]
				}
			}
			// softmax of the head's logits: exp(y_k − y_best) / Σ exp(y_j − y_best)
			e := make([]float64, len(h.Classes))
			var z float64
			for k := range h.Classes {
				e[k] = math.Exp(float64(y[off+k] - y[off+best]))
				z += e[k]
			}
			conf = min(conf, 1/z)
			if h.Multi { // one sigmoid a finding: σ(y₁ − y₀)
				a := h.Attrs[0]
				if n, ok := p.rec.attribute(a); ok && h.Finding < n {
					if probs[a] == nil {
						probs[a] = make([]float64, n)
					}
					probs[a][h.Finding] = sigmoid(float64(y[off+1] - y[off]))
				}
				off += len(h.Classes)
				continue
			}
			for i, a := range h.Attrs {
				at, ok := p.rec.attribute(a)
				if !ok {
					continue
				}
				pa := make([]float64, at)
				for k, v := range h.Classes {
					if c := v[i]; c >= 0 && c < at {
						pa[c] += e[k] / z
					}
				}
				for c := range pa {
					pa[c] = min(pa[c], 1)
				}
				probs[a] = pa
			}
			off += len(h.Classes)
		}
	})
	p.model.SetTraining(false)
	return out, probs, &conf, err
}

// priorProbs are the prior lane's probabilities: the training labels' shares (none in a
// checkpoint older than them).
func (p *predictor) priorProbs() map[string][]float64 {
	out := map[string][]float64{}
	for a, c := range p.rec.Prior {
		if f, ok := p.rec.Freqs[a]; ok && c >= 0 && c < len(f) {
			out[a] = f
		}
	}
	if f, ok := p.rec.Freqs[p.rec.Multi]; ok && p.rec.Multi != "" {
		out[p.rec.Multi] = f
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Close frees the model's device memory (nothing on the CPU or for the prior).
func (p *predictor) Close() {
	if p.model != nil {
		p.model.Close()
	}
}

func (cls) Predict(ctx context.Context, req *protocol.PredictRequest) (*protocol.PredictResponse, error) {
	return device.PredictCases(ctx, "classification", req.Cases, func(be engine.Backend) (*predictor, error) {
		return load(be, req.Checkpoint)
	}, func(p *predictor, k protocol.Case) (protocol.Prediction, error) {
		var none protocol.Prediction
		path, err := imageplugin.OutPath(req.OutputDir, k.ID)
		if err != nil {
			return none, err
		}
		cl, probs, conf, err := p.classes(k)
		if err != nil {
			return none, fmt.Errorf("case %s: %w", k.ID, err)
		}
		ann := &taskspec.Annotation{Classes: cl, Probs: probs}
		if a := p.rec.Multi; a != "" {
			ann.Findings = map[string][]int{a: present(probs[a])}
		}
		if len(ann.Classes) == 0 {
			ann.Classes = nil
		}
		if err := ann.WriteFile(path); err != nil {
			return none, fmt.Errorf("case %s: %w", k.ID, err)
		}
		return protocol.Prediction{Files: []string{path}, Confidence: conf}, nil
	})
}
