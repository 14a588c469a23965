// Package imageplugin is the plumbing AMID's image-level plugins (classification and
// image quality: one image or volume in, one taskspec.Annotation JSON out per case)
// share around their models: starting the plugin process ([Main]), describing it
// ([Describe]), reading the task's spec ([Spec]), planning the network from a dataset
// fingerprint ([MedianDims], [Planned]), loading the cases' images onto the grid
// ([LoadImages]), checkpoint records ([ReadRecord]) and prediction files
// ([OutPath]). What their tests share is in imageplugintest, so that the plugins do not
// link the testing packages; the models themselves are in amid/plugins/internal/cnn.
package imageplugin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"amid/plugins/engine"
	"amid/plugins/engine/ckpt"
	"amid/plugins/internal/cnn"
	"amid/plugins/internal/device"
	"amid/plugins/protocol"
	"amid/plugins/sdk"
	"amid/plugins/taskspec"
)

// Main is the main function of the plugin amid-plugin-<name>: it lets the engine pick
// OpenBLAS's core type (a failure is logged to stderr, not fatal) and serves impl.
func Main(name string, impl protocol.Plugin) {
	if err := engine.EnsureCoreType(); err != nil {
		fmt.Fprintln(os.Stderr, "amid-plugin-"+name+":", err)
	}
	sdk.Serve(impl)
}

// Describe is the description of the plugin name at version: tasks of kind in 2D and 3D,
// scored by metrics, configured by schema (a JSON schema), trained on the device the
// setting chooses (package device) among the hardware listed.
func Describe(name, version, kind string, metrics []string, schema string) *protocol.DescribeResponse {
	hw, id := device.Describe(0)
	return &protocol.DescribeResponse{
		Name:            name,
		Version:         version,
		ProtocolVersion: protocol.Version,
		Tasks:           []protocol.TaskKind{{Kind: kind, Dims: []int{2, 3}}},
		Metrics:         metrics,
		ConfigSchema:    []byte(schema),
		Hardware:        hw,
		Compute:         id,
	}
}

// Spec parses and checks the spec of task t, which must be of kind (the plugin's name).
// A task without a spec gets what none returns. A parsed spec must pass check (when not
// nil) and have the task's dimensions (when the task names them).
func Spec(t protocol.Task, kind string, none func() (*taskspec.Spec, error), check func(*taskspec.Spec) error) (*taskspec.Spec, error) {
	if t.Kind != kind {
		return nil, fmt.Errorf("the %s plugin handles %s tasks only, not %q", kind, kind, t.Kind)
	}
	if len(t.Spec) == 0 {
		return none()
	}
	s, err := taskspec.Parse(t.Spec)
	if err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(s); err != nil {
			return nil, err
		}
	}
	if t.Dims != 0 && s.Dims != t.Dims {
		return nil, fmt.Errorf("%w: the spec has %d dimensions, the task %d", taskspec.ErrSpec, s.Dims, t.Dims)
	}
	return s, nil
}

// MedianDims is the median (D, H, W) of a dataset fingerprint's cases ({"cases":
// [{"dims": [D, H, W]}]}, as the segmentation plugin's fingerprint has them), per axis
// over the cases that give it; zero where unknown.
func MedianDims(b []byte) [3]int {
	var f struct {
		Cases []struct {
			Dims []int `json:"dims"`
		} `json:"cases"`
	}
	if json.Unmarshal(b, &f) != nil {
		return [3]int{}
	}
	var out [3]int
	for a := range 3 {
		var v []int
		for _, c := range f.Cases {
			if len(c.Dims) == 3 && c.Dims[a] > 0 {
				v = append(v, c.Dims[a])
			}
		}
		if len(v) > 0 {
			slices.Sort(v)
			out[a] = v[len(v)/2]
		}
	}
	return out
}

// Planned is the network planned for a task of dims dimensions whose images have the
// median size med (zero: unknown), trained for steps steps in epochs of 100 with progress
// every 10: a 128² grid with five stages of 16 to 256 channels and batch 16 in 2D (a 512²
// CT slice averaged 4×4), 48³ with 8 to 128 and batch 4 in 3D; no axis of the grid
// larger than the images' (nor, for such, smaller than 2).
func Planned(dims int, med [3]int, steps int) cnn.Net {
	n := cnn.Net{Grid: [3]int{48, 48, 48}, Widths: []int{8, 16, 32, 64, 128}, Batch: 4, Steps: steps, Epoch: 100, Report: 10}
	if dims == 2 {
		n = cnn.Net{Grid: [3]int{1, 128, 128}, Widths: []int{16, 32, 64, 128, 256}, Batch: 16, Steps: steps, Epoch: 100, Report: 10}
	}
	for a := range 3 {
		if med[a] > 0 && med[a] < n.Grid[a] {
			n.Grid[a] = max(med[a], min(n.Grid[a], 2))
		}
	}
	return n
}

// LoadImages loads the cases' images onto n's grid (and region of interest), checking
// that they all have channels channels (0: as many as the first case).
func LoadImages(ctx context.Context, cases []protocol.Case, dims int, n cnn.Net, channels int) ([]*cnn.Image, error) {
	out := make([]*cnn.Image, len(cases))
	for i, k := range cases {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		im, err := cnn.Load(k.Images, dims, n.ROIXYZ(), n.GridXYZ())
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", k.ID, err)
		}
		if channels == 0 {
			channels = im.C
		}
		if im.C != channels {
			return nil, fmt.Errorf("case %s: %w: %d channels, other cases have %d", k.ID, cnn.ErrImage, im.C, channels)
		}
		out[i] = im
	}
	return out, nil
}

// ReadRecord reads the training record of the checkpoint at path (what training saved
// beside the weights, ckpt.Checkpoint.Train) into rec.
func ReadRecord(path string, rec any) error {
	man, err := ckpt.ReadManifest(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(man.Train, rec); err != nil {
		return fmt.Errorf("checkpoint %s: training record: %w", path, err)
	}
	return nil
}

// OutPath is the prediction file <id>.json of case id in dir; an id that is not a plain
// file name is an error.
func OutPath(dir, id string) (string, error) {
	if id == "" || id != filepath.Base(id) || id == "." || id == ".." {
		return "", fmt.Errorf("case id %q cannot name a file", id)
	}
	return filepath.Join(dir, id+".json"), nil
}

// Fit plans net's batch to the device the setting chooses (package device): the encoder
// for in channels and outputs, trained with AdamW (the loss layer, a few values per
// sample, left out). It returns the net with the batch that fits, the device planned for,
// the bytes counted there (0 on the CPU) and a few words for the rationale.
func Fit(net cnn.Net, in, outputs int) (cnn.Net, string, int64, string) {
	batch, where, bytes, why := device.Fit(net.Batch, cnn.Clip, func(be engine.Backend, n int) (*engine.Net, engine.Optimizer, error) {
		m, err := cnn.Build(be, net.Arch(in, outputs), n, net.Grid, 1, nil)
		if err != nil {
			return nil, nil, err
		}
		return m.Net, engine.NewAdamW(be, m.Params(), cnn.DefaultLR, cnn.DefaultDecay), nil
	})
	net.Batch = batch
	return net, where, bytes, why
}
