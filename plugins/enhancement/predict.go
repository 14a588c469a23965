package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"amid/plugins/engine"
	"amid/plugins/engine/ckpt"
	"amid/plugins/engine/infer"
	"amid/plugins/internal/device"
	"amid/plugins/metrics"
	"amid/plugins/protocol"
	"amid/plugins/taskspec"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// model is a trained network ready to enhance images, on the backend it was loaded on;
// Close frees its device memory.
type model struct {
	c   config
	be  engine.Backend
	win *engine.ResUNet // batch 1 of the training patch
	nw  *infer.NetWindow
	// whole is the network for the last image size of whole-image inference.
	whole     *engine.ResUNet
	wholePred *engine.Predictor
	wholeSize [2]int
}

// load rebuilds the network a checkpoint was trained with (from the configuration it
// records) on be for one patch at a time.
func load(be engine.Backend, path string) (*model, error) {
	man, err := ckpt.ReadManifest(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	var s saved
	if err := json.Unmarshal(man.Train, &s); err != nil {
		return nil, fmt.Errorf("checkpoint %s: training configuration: %w", path, err)
	}
	b, err := json.Marshal(s.Config)
	if err != nil {
		return nil, err
	}
	c, err := parseConfig(b)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	m := &model{c: c, be: be}
	if m.win, err = engine.BuildResUNet(m.be, c.net(), 1, c.patch3(), 1, c.loss(), engine.ForInference); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if _, err := ckpt.Load(path, c.net(), m.win, nil); err != nil {
		m.Close()
		return nil, err
	}
	m.win.SetTraining(false)
	if m.c.Inference != "whole" {
		opt := infer.Options{Patch: m.c.patchXYZ(), Channels: 1, Classes: 1, Overlap: m.c.Overlap, Mirror: m.c.Mirror}
		if m.nw, err = infer.NewNetWindow(m.win.Net, m.win.Input, m.win.Output, opt); err != nil {
			m.Close()
			return nil, fmt.Errorf("checkpoint %s: %w", path, err)
		}
	}
	return m, nil
}

// Close frees the model's device memory (nothing on the CPU).
func (m *model) Close() {
	if m.nw != nil {
		m.nw.Close()
	}
	m.dropWhole()
	m.win.Free()
}

// dropWhole frees the whole-image network.
func (m *model) dropWhole() {
	if m.wholePred != nil {
		m.wholePred.Close()
	}
	if m.whole != nil {
		m.whole.Free()
	}
	m.whole, m.wholePred = nil, nil
}

// wholeNet returns a network for an image of h×w padded to the pooling, with the
// trained weights.
func (m *model) wholeNet(h, w int) (*engine.ResUNet, error) {
	div := 1 << (len(m.c.Widths) - 1)
	ph := max((h+div-1)/div*div, m.c.Window)
	pw := max((w+div-1)/div*div, m.c.Window)
	ph, pw = (ph+div-1)/div*div, (pw+div-1)/div*div
	if m.whole != nil && m.wholeSize == [2]int{ph, pw} {
		return m.whole, nil
	}
	m.dropWhole() // let the last one go before building the next
	u, err := engine.BuildResUNet(m.be, m.c.net(), 1, [3]int{1, ph, pw}, 1, m.c.loss(), engine.ForInference)
	if err != nil {
		return nil, err
	}
	src, dst := m.win.Params(), u.Params()
	for i := range dst {
		copy(dst[i].Data, src[i].Data)
	}
	u.SetTraining(false)
	pred, err := engine.NewPredictor(u.Net, u.Output) // uploads the weights copied
	if err != nil {
		u.Free()
		return nil, err
	}
	m.whole, m.wholePred, m.wholeSize = u, pred, [2]int{ph, pw}
	return u, nil
}

// enhance returns the restored image of g in g's scale (W×H values, about [0, 1]).
func (m *model) enhance(g *gray) ([]float32, error) {
	in := g.scaled(g.Scale)
	if m.c.Inference == "whole" {
		u, err := m.wholeNet(g.H, g.W)
		if err != nil {
			return nil, err
		}
		pw := u.Input.Shape.W
		clear(u.Input.Data)
		for y := range g.H {
			copy(u.Input.Data[y*pw:y*pw+g.W], in[y*g.W:(y+1)*g.W])
		}
		if err := m.wholePred.Run(); err != nil {
			return nil, err
		}
		out := make([]float32, g.W*g.H)
		for y := range g.H {
			copy(out[y*g.W:(y+1)*g.W], u.Output.Data[y*pw:y*pw+g.W])
		}
		return out, nil
	}
	return m.nw.Run(in, [3]int{g.W, g.H, 1})
}

// restore is the enhanced image of g as a one-channel volume of g's element type and
// geometry: values scaled back, rounded and clipped to the type's range for integer
// types.
func (m *model) restore(g *gray) (*volume.Volume, error) {
	out, err := m.enhance(g)
	if err != nil {
		return nil, err
	}
	t := g.Vol.DType()
	v, err := volume.New(t, [4]int{g.W, g.H, 1, 1})
	if err != nil {
		return nil, err
	}
	v.Spacing, v.Origin, v.Direction = g.Vol.Spacing, g.Vol.Origin, g.Vol.Direction
	for i, x := range out {
		v.SetIndex(i, float64(x)*g.Scale) // SetIndex rounds and clips integers to their range
	}
	return v, nil
}

// writable are the extensions imageio writes.
var writable = []string{".nii.gz", ".nii", ".mha", ".nrrd", ".png", ".tif", ".tiff"}

// outPath is the prediction file of case id in dir: with the task's output suffix when
// the spec names one, else the input's own (PNG for 8- and 16-bit images in a format
// imageio cannot write, TIFF for others).
func outPath(dir, id, img string, spec *taskspec.Spec, t volume.DType) (string, error) {
	if id == "" || id != filepath.Base(id) || id == "." || id == ".." {
		return "", fmt.Errorf("case id %q cannot name a file", id)
	}
	if spec != nil && spec.Output != "" {
		if !strings.HasPrefix(spec.Output, ".") || strings.ContainsAny(spec.Output, `/\`) {
			return "", fmt.Errorf("task spec output %q is not a file suffix", spec.Output)
		}
		return filepath.Join(dir, id+spec.Output), nil
	}
	ext := ".tif"
	if t == volume.Uint8 || t == volume.Uint16 {
		ext = ".png"
	}
	low := strings.ToLower(img)
	for _, e := range writable {
		if strings.HasSuffix(low, e) {
			ext = e
			break
		}
	}
	return filepath.Join(dir, id+ext), nil
}

func (enh) Predict(ctx context.Context, req *protocol.PredictRequest) (*protocol.PredictResponse, error) {
	spec, err := checkTask(req.Task)
	if err != nil {
		return nil, fmt.Errorf("enhancement predict: %w", err)
	}
	return device.PredictCases(ctx, "enhancement", req.Cases, func(be engine.Backend) (*model, error) {
		return load(be, req.Checkpoint)
	}, func(m *model, c protocol.Case) (protocol.Prediction, error) {
		if len(c.Images) == 0 {
			return protocol.Prediction{}, fmt.Errorf("case %s has no image file", c.ID)
		}
		g, err := readGray(c.Images[0])
		if err != nil {
			return protocol.Prediction{}, fmt.Errorf("case %s: %w", c.ID, err)
		}
		p, err := outPath(req.OutputDir, c.ID, c.Images[0], spec, g.Vol.DType())
		if err != nil {
			return protocol.Prediction{}, err
		}
		v, err := m.restore(g)
		if err != nil {
			return protocol.Prediction{}, fmt.Errorf("case %s: %w", c.ID, err)
		}
		if err := imageio.Write(p, v); err != nil {
			return protocol.Prediction{}, fmt.Errorf("case %s: %w", c.ID, err)
		}
		return protocol.Prediction{Files: []string{p}}, nil
	})
}

// maxPSNR caps the PSNR of one image (the grader's is +Inf for an exact copy) so that
// means stay finite.
const maxPSNR = 100

// scores are the USenhance figures of a prediction against its reference, computed on
// the values a written file holds.
func scores(pred, ref *volume.Volume) (lncc, ssim, psnr float64, err error) {
	a := metrics.Image{W: pred.Dims[0], H: pred.Dims[1], Pix: make([]float64, pred.NumVoxels())}
	b := metrics.Image{W: ref.Dims[0], H: ref.Dims[1], Pix: make([]float64, ref.NumVoxels())}
	if pred.Dims[3] != 1 || ref.Dims[3] != 1 {
		return 0, 0, 0, fmt.Errorf("scores need one channel, not %d and %d", pred.Dims[3], ref.Dims[3])
	}
	for i := range a.Pix {
		a.Pix[i] = pred.AtIndex(i)
	}
	for i := range b.Pix {
		b.Pix[i] = ref.AtIndex(i)
	}
	rng := metrics.DataRange(a, b)
	if lncc, err = metrics.LNCC(a, b); err != nil {
		return
	}
	switch {
	case a.W < metrics.SSIMWindow || a.H < metrics.SSIMWindow:
		// SSIM is undefined on an image smaller than its window (skimage raises): NaN,
		// which validate leaves out of its figures.
		ssim = math.NaN()
	case rng == 0:
		// Both images are one and the same constant: the grader's SSIM divides 0 by 0;
		// here they agree perfectly.
		ssim = 1
	default:
		ssim, err = metrics.SSIM(a, b, rng)
	}
	if err != nil {
		return
	}
	psnr, err = metrics.PSNR(a, b, rng)
	return lncc, ssim, min(psnr, maxPSNR), err
}

// grayVolume is g as a one-channel volume of its file's element type.
func grayVolume(g *gray) (*volume.Volume, error) {
	v, err := volume.New(g.Vol.DType(), [4]int{g.W, g.H, 1, 1})
	if err != nil {
		return nil, err
	}
	for i, x := range g.Pix {
		v.SetIndex(i, float64(x))
	}
	return v, nil
}

// validate scores the checkpoint on cases: the means over cases of LNCC, SSIM and PSNR of
// the enhanced images against their targets ("lncc", "ssim", "psnr"), and of the
// low-quality inputs themselves, the identity's figures ("lncc_input", …).
func validate(ctx context.Context, path string, cases []protocol.Case, log device.Log) (map[string]float64, error) {
	var out map[string]float64
	_, err := device.Predict(0, log, func(be engine.Backend) error {
		var err error
		out, err = scoreCases(ctx, be, path, cases)
		return err
	})
	return out, err
}

// scoreCases is validate's work on be.
func scoreCases(ctx context.Context, be engine.Backend, path string, cases []protocol.Case) (map[string]float64, error) {
	m, err := load(be, path)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	out := map[string]float64{}
	undefined := map[string]bool{} // figures undefined on a case (SSIM of an image under its window)
	for _, c := range cases {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(c.Images) == 0 {
			return nil, fmt.Errorf("validation case %s has no image", c.ID)
		}
		low, high, err := readPair(c.ID, c.Images[0], c.Label)
		if err != nil {
			return nil, err
		}
		pred, err := m.restore(low)
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", c.ID, err)
		}
		ref, err := grayVolume(high)
		if err != nil {
			return nil, err
		}
		in, err := grayVolume(low)
		if err != nil {
			return nil, err
		}
		for suffix, v := range map[string]*volume.Volume{"": pred, "_input": in} {
			l, s, p, err := scores(v, ref)
			if err != nil {
				return nil, fmt.Errorf("case %s: %w", c.ID, err)
			}
			out["lncc"+suffix] += l / float64(len(cases))
			out["ssim"+suffix] += s / float64(len(cases))
			out["psnr"+suffix] += p / float64(len(cases))
			undefined["ssim"+suffix] = undefined["ssim"+suffix] || math.IsNaN(s)
		}
	}
	for k, u := range undefined {
		if u {
			delete(out, k) // a mean over the cases it is defined on would not be the figure
		}
	}
	for k, v := range out {
		if math.IsNaN(v) {
			return nil, fmt.Errorf("validation figure %s is NaN", k)
		}
	}
	return out, nil
}
