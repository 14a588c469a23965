package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"

	"amid/plugins/engine"
	"amid/plugins/engine/ckpt"
	"amid/plugins/engine/data"
	"amid/plugins/engine/infer"
	"amid/plugins/internal/device"
	"amid/plugins/protocol"
	"amid/plugins/taskspec"
	"amid/viewer/volume"
)

// saved is what a checkpoint records besides the weights: the configuration, the task's
// spec and what training fitted, enough to predict without the request's task.
type saved struct {
	Config   config         `json:"config"`
	Mode     string         `json:"mode"`
	Channels int            `json:"channels"`
	Spec     *taskspec.Spec `json:"spec"`
	// RefSize is the centernet lane's reference box size (geometric mean of the training
	// boxes, working pixels) that sizes are regressed against.
	RefSize [2]float64 `json:"ref_size,omitzero"`
	// Threshold is the lowest score kept at prediction.
	Threshold float64 `json:"threshold"`
	// Calib (a, b) maps a centre's heatmap logit l to the score σ(a·l + b) (Platt
	// scaling, fitted on the validation boxes); zero: σ(l).
	Calib [2]float64 `json:"calibration,omitzero"`
	// Prior is the 3D box prior (both 3D lanes: box3d_seg falls back to it).
	Prior *prior `json:"prior,omitempty"`
	// Atlas is the box_transfer lane's training boxes (its images are the checkpoint's
	// extra bytes).
	Atlas *atlas `json:"atlas,omitempty"`
}

// calibrate is the calibrated score of a heatmap logit.
func (s *saved) calibrate(logit float32) float64 {
	if s.Calib == [2]float64{} {
		return sigmoid(float64(logit))
	}
	return sigmoid(s.Calib[0]*float64(logit) + s.Calib[1])
}

// detector predicts the annotation of one case.
type detector struct {
	s     saved
	head  *engine.HeadUNet // centernet and points lanes
	seg   *engine.UNet     // box3d_seg
	pred  *engine.Predictor
	patch [3]int // D, H, W of the network's input
	atlas *atlas // box_transfer
}

// Close frees the detector's device memory (nothing on the CPU or for the prior).
func (d *detector) Close() {
	if d.pred != nil {
		d.pred.Close()
	}
	if d.head != nil {
		d.head.Free()
	}
	if d.seg != nil {
		d.seg.Free()
	}
}

// arch is the network a training record describes.
func (s *saved) arch() engine.UNetConfig {
	return s.Config.arch(s.Channels, headChannels(s.Mode, s.Spec))
}

// load rebuilds the detector a checkpoint was trained as on be, for one input at a time.
func load(be engine.Backend, path string) (*detector, error) {
	man, err := ckpt.ReadManifest(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	var s saved
	if err := json.Unmarshal(man.Train, &s); err != nil {
		return nil, fmt.Errorf("checkpoint %s: training record: %w", path, err)
	}
	b, err := json.Marshal(s.Config)
	if err != nil {
		return nil, err
	}
	if s.Config, err = parseConfig(b); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if s.Spec == nil || s.Mode != laneMode(s.Config.Lane) {
		return nil, fmt.Errorf("checkpoint %s: training record without spec or with mode %q for lane %q", path, s.Mode, s.Config.Lane)
	}
	d := &detector{s: s, patch: s.Config.Size}
	if s.Config.Lane == laneTransfer {
		if s.Atlas == nil {
			return nil, fmt.Errorf("checkpoint %s: box_transfer without its atlas", path)
		}
		_, st, err := ckpt.Read(path)
		if err != nil {
			return nil, err
		}
		if err := s.Atlas.decode(st.Extra, len(s.Spec.Attributes)); err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", path, err)
		}
		d.atlas = s.Atlas
		return d, nil
	}
	if s.Config.Lane == lanePrior3D {
		if s.Prior == nil {
			return nil, fmt.Errorf("checkpoint %s: box3d_prior without its prior", path)
		}
		return d, nil
	}
	if s.Channels < 1 {
		return nil, fmt.Errorf("checkpoint %s: %d image channels", path, s.Channels)
	}
	arch := s.arch()
	var (
		m   *engine.Net
		out engine.Output
	)
	if s.Mode == modeBox3D {
		if s.Prior == nil {
			return nil, fmt.Errorf("checkpoint %s: box3d_seg without its fallback prior", path)
		}
		if d.seg, err = engine.BuildUNet(be, arch, 1, d.patch, 1); err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", path, err)
		}
		d.seg.SetTraining(false)
		m, out = d.seg.Net, d.seg.Loss
	} else {
		if d.head, err = engine.BuildUNetHead(be, arch, s.Config.head(s.Mode), 1, d.patch, 1, nil, engine.ForInference); err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", path, err)
		}
		d.head.SetTraining(false)
		m, out = d.head.Net, d.head.Logits
	}
	if _, err := ckpt.Load(path, arch, m, nil); err != nil {
		d.Close()
		return nil, err
	}
	if d.pred, err = engine.NewPredictor(m, out); err != nil {
		d.Close()
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return d, nil
}

// detect predicts the annotation of a case's image files.
func (d *detector) detect(paths []string) (*taskspec.Annotation, error) {
	v, err := data.ReadChannels(paths)
	if err != nil {
		return nil, err
	}
	dims := [3]int{v.Dims[0], v.Dims[1], v.Dims[2]}
	c := d.s.Config
	switch d.s.Mode {
	case modeBox3D:
		b, err := d.box3D(v)
		if err != nil {
			return nil, err
		}
		return &taskspec.Annotation{Box3D: b}, nil
	case modeBoxes, modePoints:
		if dims[2] != 1 {
			return nil, fmt.Errorf("%w: image %s has %d slices, a 2-D detection task takes 2-D images", ErrInput, paths[0], dims[2])
		}
	}
	p, err := prepare(v, imageChannels(d.s.Mode), workDims(d.s.Mode, c, dims))
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", paths[0], err)
	}
	if d.atlas != nil {
		return &taskspec.Annotation{Boxes: d.transferBoxes(p, [2]int{dims[0], dims[1]})}, nil
	}
	if d.s.Mode == modeBoxes {
		copy(d.head.Input.Data, p.data)
		coords(d.head.Input.Data[len(p.data):], p.dims[0], p.dims[1], 0, 0)
		copy(d.head.Side.Sample(0), d.head.Input.Data[len(p.data):])
		if err := d.pred.Run(); err != nil {
			return nil, err
		}
		boxes := decodeBoxes(d.head.Logits.Data, p.dims[0], p.dims[1], [2]float64{p.scale[0], p.scale[1]}, [2]int{dims[0], dims[1]}, &d.s)
		return &taskspec.Annotation{Boxes: boxes}, nil
	}
	K := len(d.s.Spec.Points)
	var runErr error
	prob, err := infer.Window(p.data, p.dims, infer.Options{Patch: c.sizeXYZ(), Channels: d.s.Channels, Classes: K},
		func(in, out []float32) {
			copy(d.head.Input.Data, in)
			if err := d.pred.Run(); err != nil && runErr == nil {
				runErr = err
			}
			for i, v := range d.head.Logits.Data {
				out[i] = float32(sigmoid(float64(v)))
			}
		})
	if err == nil {
		err = runErr
	}
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", paths[0], err)
	}
	pts := decodePoints(prob, K, p.dims[0], p.dims[1], [2]float64{p.scale[0], p.scale[1]}, d.s.Spec.Points, d.s.Threshold, minDistance(c), c.MaxDets)
	return &taskspec.Annotation{Points: pts}, nil
}

// minDistance is the points lane's smallest distance between two points, in working
// pixels: 1.5 σ of the target Gaussians, so that one nucleus gives one peak.
func minDistance(c config) float64 { return math.Max(1, 1.5*c.Sigma) }

// box3D predicts the box of volume v: the coarse segmentation's largest component, or
// the prior when that is empty or the lane is the prior.
func (d *detector) box3D(v *volume.Volume) (*taskspec.Box3D, error) {
	dims := [3]int{v.Dims[0], v.Dims[1], v.Dims[2]}
	fallback := d.s.Prior.predict(v)
	if d.seg == nil {
		return &fallback, nil
	}
	p, err := prepare(v, d.s.Channels, d.s.Config.sizeXYZ())
	if err != nil {
		return &fallback, nil
	}
	copy(d.seg.Input.Data, p.data)
	if err := d.pred.Run(); err != nil {
		return nil, err
	}
	prob := d.seg.Loss.Prob()
	S := len(prob) / 2
	fg := make([]bool, S)
	for i := range fg {
		fg[i] = prob[S+i] > 0.5
	}
	b, ok := boxFromMask(fg, p.dims, p.scale, dims)
	if !ok {
		return &fallback, nil
	}
	return &b, nil
}

// outPath is the prediction file of case id in dir.
func outPath(dir, id string) (string, error) {
	if id == "" || id != filepath.Base(id) || id == "." || id == ".." {
		return "", fmt.Errorf("case id %q cannot name a file", id)
	}
	return filepath.Join(dir, id+".json"), nil
}

func (det) Predict(ctx context.Context, req *protocol.PredictRequest) (*protocol.PredictResponse, error) {
	return device.PredictCases(ctx, "detection", req.Cases, func(be engine.Backend) (*detector, error) {
		return load(be, req.Checkpoint)
	}, func(d *detector, c protocol.Case) (protocol.Prediction, error) {
		if len(c.Images) == 0 {
			return protocol.Prediction{}, fmt.Errorf("%w: case %s has no image file", ErrInput, c.ID)
		}
		p, err := outPath(req.OutputDir, c.ID)
		if err != nil {
			return protocol.Prediction{}, err
		}
		a, err := d.detect(c.Images)
		if err != nil {
			return protocol.Prediction{}, fmt.Errorf("case %s: %w", c.ID, err)
		}
		if err := a.WriteFile(p); err != nil {
			return protocol.Prediction{}, fmt.Errorf("case %s: %w", c.ID, err)
		}
		return protocol.Prediction{Files: []string{p}, Confidence: confidence(a)}, nil
	})
}

// confidence is how sure the model is of a case's boxes or points, from 0 to 1: one minus
// the mean binary entropy (in bits) of their scores, each score being the probability the
// model gives that the item is a finding (0.5: no idea; near 0 or 1: sure), as the
// segmentation plugin's is one minus the mean normalised entropy of its voxels. A case
// without any is 1: every candidate fell below the threshold. A 3-D box, cut from a
// segmentation or taken from the prior, has none (nil).
func confidence(a *taskspec.Annotation) *float64 {
	if a.Box3D != nil {
		return nil
	}
	var h float64
	n := 0
	add := func(s float64) {
		s = math.Min(math.Max(s, 0), 1)
		if s > 0 && s < 1 {
			h -= s*math.Log2(s) + (1-s)*math.Log2(1-s)
		}
		n++
	}
	for _, b := range a.Boxes {
		add(b.Score)
	}
	for _, p := range a.Points {
		add(p.Score)
	}
	c := 1.0
	if n > 0 {
		c = 1 - h/float64(n)
	}
	return &c
}
