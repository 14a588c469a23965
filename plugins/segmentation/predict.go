package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"amid/plugins/engine"
	"amid/plugins/engine/ckpt"
	"amid/plugins/engine/data"
	"amid/plugins/engine/infer"
	"amid/plugins/internal/device"
	"amid/plugins/metrics"
	"amid/plugins/protocol"
	"amid/plugins/segmentation/plan"
	"amid/plugins/taskspec"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// model is a trained network ready for inference with the configuration it was trained
// with (the inference fields possibly replaced by a request's), on the backend it was
// loaded on; Close frees its device memory.
type model struct {
	infer.Model
	cfg config
	u   *engine.UNet
	// nw runs the windows (Model.Stream); a network with position planes runs pred on the
	// windows Model.Predict is given instead, and err keeps its first failure.
	nw   *infer.NetWindow
	pred *engine.Predictor
	err  error
	// low is a cascade's low-resolution model, and prior the one-hot planes of its
	// segmentation of the case being predicted, on the grid the network runs on.
	low   *model
	prior []float32
	// grid is the spacing of the image being predicted, for a forest on the image's own
	// grid (its features are in mm).
	grid [3]float64
}

// load rebuilds the network a checkpoint was trained with (from the configuration it
// records) on be for inferBatch patches at a time. A non-empty override is a configuration
// whose inference fields (postprocess, min_component, mirror) replace the checkpoint's:
// the host chooses the post-processing after training. A cascade checkpoint loads the
// low-resolution network it carries too.
func load(be engine.Backend, path string, override []byte) (*model, error) {
	return loadBatch(be, path, override, 0)
}

// loadBatch is [load] with batch patches per call of the network (inferBatch's when 0).
func loadBatch(be engine.Backend, path string, override []byte, batch int) (*model, error) {
	man, err := ckpt.ReadManifest(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	var s saved
	if err := json.Unmarshal(man.Train, &s); err != nil {
		return nil, fmt.Errorf("checkpoint %s: training configuration: %w", path, err)
	}
	c, err := recorded(s)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if len(override) > 0 {
		o, err := parseConfig(override)
		if err != nil {
			return nil, fmt.Errorf("request: %w", err)
		}
		c.Post, c.MinComponent, c.Mirror = o.Post, o.MinComponent, o.Mirror
	}
	if c.Lane == plan.LaneForest {
		return wireForest(path, s, c)
	}
	if batch <= 0 {
		batch = inferBatch(be, c.Batch)
	}
	u, err := engine.BuildUNet(be, c.net(s.Channels), batch, c.Patch, 1, engine.ForInference)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if c.Lane != plan.Lane3DCascade {
		if _, err := ckpt.Load(path, c.net(s.Channels), u, nil); err != nil {
			u.Free()
			return nil, err
		}
		return wire(be, u, c, s.Channels, batch, path)
	}
	if s.Lowres == nil {
		u.Free()
		return nil, fmt.Errorf("checkpoint %s: a %s checkpoint without its low-resolution network", path, c.Lane)
	}
	lc, err := recorded(*s.Lowres)
	if err == nil && s.Lowres.Channels != s.Channels {
		err = fmt.Errorf("its low-resolution network takes %d image channels, the cascade %d", s.Lowres.Channels, s.Channels)
	}
	if err != nil {
		u.Free()
		return nil, fmt.Errorf("checkpoint %s: low-resolution network: %w", path, err)
	}
	lb := inferBatch(be, lc.Batch)
	lu, err := engine.BuildUNet(be, lc.net(s.Channels), lb, lc.Patch, 1, engine.ForInference)
	if err != nil {
		u.Free()
		return nil, fmt.Errorf("checkpoint %s: low-resolution network: %w", path, err)
	}
	if _, err := ckpt.Load(path, c.net(s.Channels), withLowres{full: u, low: lu}, nil); err != nil {
		u.Free()
		lu.Free()
		return nil, err
	}
	low, err := wire(be, lu, lc, s.Channels, lb, path)
	if err != nil {
		u.Free()
		return nil, err
	}
	m, err := wire(be, u, c, s.Channels, batch, path)
	if err != nil {
		low.Close()
		return nil, err
	}
	m.low = low
	return m, nil
}

// recorded is the configuration a checkpoint's training record holds, checked.
func recorded(s saved) (config, error) {
	b, err := json.Marshal(s.Config)
	if err != nil {
		return config{}, err
	}
	c, err := parseConfig(b)
	if err != nil {
		return c, err
	}
	if s.Channels < 1 {
		return c, fmt.Errorf("%d image channels", s.Channels)
	}
	return c, nil
}

// wire makes the model of the network u, its weights loaded, for images of ch channels:
// the windows run on the device, or through a Predictor when the network takes position
// planes; a cascade's windows get the one-hot planes of model.prior after the image's.
// It frees u when it fails.
func wire(be engine.Backend, u *engine.UNet, c config, ch, batch int, path string) (*model, error) {
	u.SetTraining(false)
	opt := infer.Options{Patch: c.patchXYZ(), Channels: c.inputs(ch), Classes: len(c.Labels), Mirror: c.Mirror, Slices: c.Slices, Batch: batch}
	m := &model{cfg: c, u: u, Model: infer.Model{Options: opt, Spacing: c.spacingXYZ(), Norm: c.norm(), Mapping: c.Labels}}
	var err error
	if u.Position == nil {
		if m.nw, err = infer.NewNetWindow(u.Net, u.Input, u.Loss, opt); err != nil {
			u.Free()
			return nil, fmt.Errorf("checkpoint %s: %w", path, err)
		}
		m.Stream = m.nw.Stream
	} else {
		// The position planes go to an input of their own (feed): the windows are cut on
		// the host and each batch of them runs through a Predictor.
		if m.pred, err = engine.NewPredictor(u.Net, u.Loss); err != nil {
			u.Free()
			return nil, fmt.Errorf("checkpoint %s: %w", path, err)
		}
		m.Predict = func(in, out []float32) {
			feed(u, in, batch, c.stack())
			if err := m.pred.Run(); err != nil && m.err == nil {
				m.err = err
			}
			copy(out, u.Loss.Prob())
		}
	}
	if c.Lane != plan.Lane3DCascade {
		return m, nil
	}
	// infer.Segment sees the image's channels; the windows see the one-hot planes too.
	m.Channels = ch
	stream := m.Stream
	if stream == nil {
		wopt, pred := opt, m.Predict
		wopt.Channels = m.Norm.Planes(opt.Channels)
		stream = func(img []float32, dims [3]int, sink infer.Sink) error {
			return infer.WindowTo(img, dims, wopt, pred, sink)
		}
	}
	m.Stream = func(img []float32, dims [3]int, sink infer.Sink) error {
		n := dims[0] * dims[1] * dims[2]
		if len(m.prior) != (len(c.Labels)-1)*n {
			return fmt.Errorf("cascade: %d one-hot values for %d voxels of %d foreground classes", len(m.prior), n, len(c.Labels)-1)
		}
		return stream(insertPlanes(img, n, ch, m.prior), dims, sink)
	}
	return m, nil
}

// Close frees the model's device memory (nothing on the CPU).
func (m *model) Close() {
	if m.nw != nil {
		m.nw.Close()
	}
	if m.pred != nil {
		m.pred.Close()
	}
	if m.u != nil {
		m.u.Free()
	}
	if m.low != nil {
		m.low.Close()
	}
}

// inferBatch is the number of patches the network predicts per call. On the CPU, one per
// worker, so that the engine runs each on its own worker (much faster than splitting one
// patch over the workers), but no more than the training batch, whose network fitted in
// memory; on a device the training batch, which fitted its memory. It depends on the
// backend and the checkpoint alone, so that the same checkpoint predicts the same on a
// machine run after run.
func inferBatch(be engine.Backend, trainBatch int) int {
	if device.OnDevice(be) {
		return trainBatch
	}
	return max(1, min(be.Workers(), trainBatch))
}

// classes predicts the class of every voxel of a case's image files, on the image's grid,
// and, when conf is set, how sure the network is of them (infer.Confidence; else 0).
func (m *model) classes(paths []string, conf bool) (img *volume.Volume, cls []int32, sure float64, err error) {
	if img, err = m.read(paths); err != nil {
		return nil, nil, 0, err
	}
	if cls, sure, err = m.segment(img, conf); err != nil {
		return nil, nil, 0, fmt.Errorf("image %s: %w", paths[0], err)
	}
	return img, cls, sure, nil
}

// read reads a case's image files as one image of the model's channels.
func (m *model) read(paths []string) (*volume.Volume, error) {
	img, err := data.ReadChannels(paths)
	if err != nil {
		return nil, err
	}
	return conform(img, m.Channels, paths[0])
}

// segment predicts the class of every voxel of img, on its grid, and, when conf is set,
// their confidence (infer.Classes: slice by slice as the windows finish, not holding the
// class scores of the whole image).
func (m *model) segment(img *volume.Volume, conf bool) ([]int32, float64, error) {
	if err := m.begin(img); err != nil {
		return nil, 0, err
	}
	cls, sure, err := infer.Classes(img, m.Model, conf)
	if err == nil {
		err = m.err
	}
	if err != nil {
		return nil, 0, err
	}
	return cls, sure, nil
}

// scores predicts the class probabilities of every voxel of img, on its grid
// (infer.Scores: K planes, 4 bytes per voxel and class, whose argmax is segment's classes).
func (m *model) scores(img *volume.Volume) ([]float32, error) {
	if err := m.begin(img); err != nil {
		return nil, err
	}
	prob, err := infer.Scores(img, m.Model)
	if err == nil {
		err = m.err
	}
	if err != nil {
		return nil, err
	}
	return prob, nil
}

// begin readies the model for img: a cascade first segments img with its low-resolution
// model, whose classes become the network's prior planes.
func (m *model) begin(img *volume.Volume) error {
	if m.low != nil {
		low, _, err := m.low.segment(img, false)
		if err != nil {
			return fmt.Errorf("low-resolution network: %w", err)
		}
		v, err := classVolume(img, low, m.Classes)
		if err != nil {
			return err
		}
		if m.prior, _, err = priorPlanes(v, m.Spacing, m.Classes); err != nil {
			return err
		}
	}
	m.err, m.grid = nil, img.Spacing
	return nil
}

// post returns a copy of the class map cls of grid dims post-processed by option name
// (postSmooth acts on the forest's probabilities, before cls: a copy as it is).
func post(name string, cls []int32, dims [3]int, minVoxels int) []int32 {
	out := slices.Clone(cls)
	switch name {
	case postLCC:
		infer.KeepLargest(out, dims)
	case postSmall:
		infer.RemoveSmall(out, dims, minVoxels)
	case postFill:
		infer.FillHoles(out, dims)
	}
	return out
}

// label is the prediction written for a class map on img's grid: the task's label values
// after the configured post-processing, or instance ids (uint16 when they fit, else int32).
func (m *model) label(img *volume.Volume, cls []int32) (*volume.Volume, error) {
	dims := [3]int{img.Dims[0], img.Dims[1], img.Dims[2]}
	if !m.cfg.Instances {
		return infer.ToVolume(img, post(m.cfg.Post, cls, dims, m.cfg.MinComponent), m.cfg.Labels)
	}
	ids := infer.Instances(cls, dims, m.cfg.MinComponent)
	top := int32(0)
	for _, id := range ids {
		top = max(top, id)
	}
	t := volume.Int32
	if top <= math.MaxUint16 {
		t = volume.Uint16
	}
	out, err := volume.New(t, [4]int{dims[0], dims[1], dims[2], 1})
	if err != nil {
		return nil, err
	}
	out.Spacing, out.Origin, out.Direction = img.Spacing, img.Origin, img.Direction
	for i, id := range ids {
		out.SetIndex(i, float64(id))
	}
	return out, nil
}

// writable are the extensions imageio writes; other inputs get NIfTI predictions.
var writable = []string{".nii.gz", ".nii", ".mha", ".nrrd", ".png", ".tif", ".tiff"}

// outPath is the prediction file of case id whose image is at img, in dir: with the
// suffix the task asks for (taskspec.Spec.Output) when given, else the image's own when
// imageio writes it, else .nii.gz.
func outPath(dir, id, img, suffix string) (string, error) {
	if id == "" || id != filepath.Base(id) || id == "." || id == ".." {
		return "", fmt.Errorf("case id %q cannot name a file", id)
	}
	if suffix != "" {
		low := strings.ToLower(suffix)
		if !strings.HasPrefix(suffix, ".") || !slices.ContainsFunc(writable, func(e string) bool { return strings.HasSuffix(low, e) }) {
			return "", fmt.Errorf("the task's output suffix %q is not one of %v", suffix, writable)
		}
		return filepath.Join(dir, id+suffix), nil
	}
	ext := ".nii.gz"
	low := strings.ToLower(img)
	for _, e := range writable {
		if strings.HasSuffix(low, e) {
			ext = e
			break
		}
	}
	return filepath.Join(dir, id+ext), nil
}

// spec parses a task's spec; an empty one is no spec.
func spec(t protocol.Task) (*taskspec.Spec, error) {
	if len(t.Spec) == 0 {
		return nil, nil
	}
	s, err := taskspec.Parse(t.Spec)
	if err != nil {
		return nil, fmt.Errorf("task spec: %w", err)
	}
	return s, nil
}

func (seg) Predict(ctx context.Context, req *protocol.PredictRequest) (*protocol.PredictResponse, error) {
	sp, err := spec(req.Task)
	if err != nil {
		return nil, fmt.Errorf("segmentation predict: %w", err)
	}
	suffix := ""
	if sp != nil {
		suffix = sp.Output
	}
	predict := device.PredictCases[*model]
	if forestCheckpoint(req.Checkpoint) {
		predict = device.PredictCasesCPU[*model] // the forest computes on the CPU
	}
	return predict(ctx, "segmentation", req.Cases, func(be engine.Backend) (*model, error) {
		return load(be, req.Checkpoint, req.Config)
	}, func(m *model, c protocol.Case) (protocol.Prediction, error) {
		var none protocol.Prediction
		if len(c.Images) == 0 {
			return none, fmt.Errorf("case %s has no image file", c.ID)
		}
		p, err := outPath(req.OutputDir, c.ID, c.Images[0], suffix)
		if err != nil {
			return none, err
		}
		// Predict alone says how sure it is: validation, on the budget's clock, does not.
		var img *volume.Volume
		var cls []int32
		var conf float64
		pred := protocol.Prediction{Files: []string{p}, Confidence: &conf}
		if req.Probabilities {
			img, cls, conf, pred.Probabilities, err = m.probabilities(c, req.OutputDir)
		} else {
			img, cls, conf, err = m.classes(c.Images, true)
		}
		if err != nil {
			return none, fmt.Errorf("case %s: %w", c.ID, err)
		}
		lab, err := m.label(img, cls)
		if err != nil {
			return none, fmt.Errorf("case %s: %w", c.ID, err)
		}
		if err := imageio.Write(p, lab); err != nil {
			return none, fmt.Errorf("case %s: %w", c.ID, err)
		}
		return pred, nil
	})
}

// probabilities predicts case c as classes does, from the whole image's class scores,
// and writes them into dir as ID_probabilities.nii.gz (protocol.Prediction.Probabilities:
// one float32 channel per class on the image's grid); its classes and confidence are bit
// for bit those classes gives.
func (m *model) probabilities(c protocol.Case, dir string) (img *volume.Volume, cls []int32, sure float64, path string, err error) {
	if img, err = m.read(c.Images); err != nil {
		return nil, nil, 0, "", err
	}
	prob, err := m.scores(img)
	if err != nil {
		return nil, nil, 0, "", fmt.Errorf("image %s: %w", c.Images[0], err)
	}
	K := m.Classes
	cls = infer.Argmax(prob, K)
	sure = infer.Confidence(prob, K, cls)
	v, err := infer.ScoreVolume(img, prob, K)
	if err != nil {
		return nil, nil, 0, "", err
	}
	path = filepath.Join(dir, c.ID+probabilitySuffix)
	if err := imageio.Write(path, v); err != nil {
		return nil, nil, 0, "", err
	}
	return img, cls, sure, path, nil
}

// probabilitySuffix ends the name of a case's probability map.
const probabilitySuffix = "_probabilities.nii.gz"

// validate scores the checkpoint on cases. For classes, "dice" is the mean over cases of
// the mean Dice over the classes of the network's label map under rule, the rule of the
// task's grader (metrics.MeanDice), and "dice_lcc", "dice_small" and "dice_fill" the same
// after each post-processing option, so that the host can choose one (config postprocess).
// For instances, "f1" is the mean NeurIPS-CellSeg F1 at IoU 0.5 (metrics.CellSegF1) and
// "dice" the mean foreground Dice.
func validate(ctx context.Context, path string, cases []protocol.Case, rule metrics.DiceRule, log device.Log) (map[string]float64, error) {
	var sums map[string]float64
	_, err := device.Predict(0, log, func(be engine.Backend) error {
		var err error
		sums, err = scoreCases(ctx, be, path, cases, rule)
		return err
	})
	return sums, err
}

// scoreCases is validate's work on be.
func scoreCases(ctx context.Context, be engine.Backend, path string, cases []protocol.Case, rule metrics.DiceRule) (map[string]float64, error) {
	m, err := load(be, path, nil)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	sums := map[string]float64{}
	for _, c := range cases {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(c.Images) == 0 || c.Label == "" {
			return nil, fmt.Errorf("validation case %s needs an image and a label", c.ID)
		}
		img, cls, _, err := m.classes(c.Images, false)
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", c.ID, err)
		}
		ref, err := imageio.Read(c.Label)
		if err != nil {
			return nil, fmt.Errorf("label %s: %w", c.Label, err)
		}
		if ref.NumVoxels() != len(cls) || ref.Dims[3] != 1 {
			return nil, fmt.Errorf("case %s: label %v and image %v differ in grid", c.ID, ref.Dims, img.Dims)
		}
		dims := [3]int{img.Dims[0], img.Dims[1], img.Dims[2]}
		if m.cfg.Instances {
			want, err := instanceIDs(ref)
			if err != nil {
				return nil, fmt.Errorf("label %s: %w", c.Label, err)
			}
			f1, d, err := instanceScores(infer.Instances(cls, dims, m.cfg.MinComponent), want, dims)
			if err != nil {
				return nil, fmt.Errorf("case %s: %w", c.ID, err)
			}
			sums["f1"] += f1
			sums["dice"] += d
			continue
		}
		want, err := classIndex(ref, m.cfg.Labels)
		if err != nil {
			return nil, fmt.Errorf("label %s: %w", c.Label, err)
		}
		for _, p := range postprocessing {
			d, err := classDice(post(p.name, cls, dims, m.cfg.MinComponent), want, rule)
			if err != nil {
				return nil, fmt.Errorf("case %s: %w", c.ID, err)
			}
			sums[p.key] += d
		}
	}
	for k := range sums {
		sums[k] /= float64(len(cases))
	}
	return sums, nil
}

// classIndex maps a label map's values to class indices through labels.
func classIndex(ref *volume.Volume, labels []int) ([]int32, error) {
	idx := make(map[float64]int32, len(labels))
	for k, v := range labels {
		idx[float64(v)] = int32(k)
	}
	out := make([]int32, ref.NumVoxels())
	for i := range out {
		k, ok := idx[ref.AtIndex(i)]
		if !ok {
			return nil, fmt.Errorf("value %v at voxel %d is not one of the task's labels %v", ref.AtIndex(i), i, labels)
		}
		out[i] = k
	}
	return out, nil
}

// classDice is the mean Dice of the class maps pred and ref (class 0 is background) under
// the grader's rule.
func classDice(pred, ref []int32, rule metrics.DiceRule) (float64, error) {
	lo, err := metrics.CountLabels(ref, pred)
	if err != nil {
		return 0, err
	}
	return metrics.MeanDice(lo, rule), nil
}

// instanceScores are a 2D image's NeurIPS-CellSeg F1 at IoU 0.5 of the instance ids pred
// against ref (ids > 0) and the Dice of their foregrounds (1 when both are empty).
func instanceScores(pred, ref []int32, dims [3]int) (f1, dice float64, err error) {
	if dims[2] != 1 {
		return 0, 0, fmt.Errorf("instance F1 is defined for 2D images, not %v", dims)
	}
	c, err := metrics.CellSegF1(ref, pred, dims[0], dims[1], []float64{0.5})
	if err != nil {
		return 0, 0, err
	}
	fg := func(ids []int32) []int32 {
		out := make([]int32, len(ids))
		for i, id := range ids {
			out[i] = min(id, 1)
		}
		return out
	}
	dice, err = classDice(fg(pred), fg(ref), metrics.DiceUnion)
	return c[0].F1, dice, err
}
