package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"

	"amid/plugins/engine"
	"amid/plugins/engine/ckpt"
	"amid/plugins/engine/infer"
	"amid/plugins/protocol"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// load rebuilds the network a checkpoint was trained with (from the configuration it
// records) for one patch at a time and returns the inference model around it.
func load(path string) (infer.Model, error) {
	man, err := ckpt.ReadManifest(path)
	if err != nil {
		return infer.Model{}, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	var s saved
	if err := json.Unmarshal(man.Train, &s); err != nil {
		return infer.Model{}, fmt.Errorf("checkpoint %s: training configuration: %w", path, err)
	}
	b, err := json.Marshal(s.Config)
	if err != nil {
		return infer.Model{}, err
	}
	c, err := parseConfig(b)
	if err != nil {
		return infer.Model{}, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if s.Channels < 1 {
		return infer.Model{}, fmt.Errorf("checkpoint %s: %d image channels", path, s.Channels)
	}
	arch := c.net(s.Channels)
	u, err := engine.BuildUNet(engine.NewCPU(runtime.GOMAXPROCS(0)), arch, 1, c.Patch, 1)
	if err != nil {
		return infer.Model{}, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if _, err := ckpt.Load(path, arch, u, nil); err != nil {
		return infer.Model{}, err
	}
	u.SetTraining(false)
	return infer.Model{
		Options: infer.Options{Patch: c.patchXYZ(), Channels: s.Channels, Classes: len(c.Labels), Mirror: c.Mirror},
		Spacing: c.spacingXYZ(), Norm: c.norm(), Mapping: c.Labels,
		Predict: func(in, out []float32) {
			copy(u.Input.Data, in)
			u.Forward()
			copy(out, u.Loss.Prob())
		},
	}, nil
}

// segment predicts the label map of a case's image files.
func segment(m infer.Model, paths []string) (img, lab *volume.Volume, err error) {
	if img, err = readImage(paths); err != nil {
		return nil, nil, err
	}
	if lab, _, err = infer.Segment(img, m); err != nil {
		return nil, nil, fmt.Errorf("image %s: %w", paths[0], err)
	}
	return img, lab, nil
}

// writable are the extensions imageio writes; other inputs get NIfTI predictions.
var writable = []string{".nii.gz", ".nii", ".mha", ".nrrd", ".png", ".tif", ".tiff"}

// outPath is the prediction file of case id whose image is at img, in dir.
func outPath(dir, id, img string) (string, error) {
	if id == "" || id != filepath.Base(id) || id == "." || id == ".." {
		return "", fmt.Errorf("case id %q cannot name a file", id)
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

func (seg) Predict(ctx context.Context, req *protocol.PredictRequest) (*protocol.PredictResponse, error) {
	m, err := load(req.Checkpoint)
	if err != nil {
		return nil, fmt.Errorf("segmentation predict: %w", err)
	}
	out := &protocol.PredictResponse{}
	for _, c := range req.Cases {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(c.Images) == 0 {
			return nil, fmt.Errorf("segmentation predict: case %s has no image file", c.ID)
		}
		p, err := outPath(req.OutputDir, c.ID, c.Images[0])
		if err != nil {
			return nil, fmt.Errorf("segmentation predict: %w", err)
		}
		_, lab, err := segment(m, c.Images)
		if err != nil {
			return nil, fmt.Errorf("segmentation predict: case %s: %w", c.ID, err)
		}
		if err := imageio.Write(p, lab); err != nil {
			return nil, fmt.Errorf("segmentation predict: case %s: %w", c.ID, err)
		}
		out.Predictions = append(out.Predictions, protocol.Prediction{CaseID: c.ID, Files: []string{p}})
	}
	return out, nil
}

// validate scores the checkpoint on cases: "dice" is the mean over cases of the mean
// Dice over the foreground classes.
func validate(ctx context.Context, path string, cases []protocol.Case) (map[string]float64, error) {
	m, err := load(path)
	if err != nil {
		return nil, err
	}
	var sum float64
	for _, c := range cases {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(c.Images) == 0 || c.Label == "" {
			return nil, fmt.Errorf("validation case %s needs an image and a label", c.ID)
		}
		_, pred, err := segment(m, c.Images)
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", c.ID, err)
		}
		ref, err := imageio.Read(c.Label)
		if err != nil {
			return nil, fmt.Errorf("label %s: %w", c.Label, err)
		}
		d, err := dice(pred, ref, m.Mapping[1:])
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", c.ID, err)
		}
		sum += d
	}
	return map[string]float64{"dice": sum / float64(len(cases))}, nil
}

// dice is the mean Dice of pred against ref over the label values fg; a class absent
// from both scores 1.
func dice(pred, ref *volume.Volume, fg []int) (float64, error) {
	n := pred.NumVoxels()
	if ref.NumVoxels() != n || ref.Dims[3] != 1 || pred.Dims[3] != 1 {
		return 0, fmt.Errorf("prediction %v and label %v differ in grid", pred.Dims, ref.Dims)
	}
	var total float64
	for _, v := range fg {
		var inter, a, b int
		for i := range n {
			p, r := int(pred.AtIndex(i)) == v, int(ref.AtIndex(i)) == v
			if p {
				a++
			}
			if r {
				b++
			}
			if p && r {
				inter++
			}
		}
		if a+b == 0 {
			total++
		} else {
			total += 2 * float64(inter) / float64(a+b)
		}
	}
	return total / float64(len(fg)), nil
}
