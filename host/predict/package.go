package predict

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"amid/assets/fileio"
	"amid/host/catalog"
	"amid/host/export"
	"amid/host/store"
	"amid/host/supervisor"
	"amid/host/task"
	"amid/plugins/compute"
)

// ModelConfig is model/config.json of a package: what predicting needs besides the plugin
// and the weights.
type ModelConfig struct {
	Lane         string          `json:"lane"`
	Fold         int             `json:"fold"`
	Plugin       string          `json:"plugin"`
	PluginConfig json.RawMessage `json:"plugin_config"`
	Checkpoint   string          `json:"checkpoint"` // file name under model/
	Data         string          `json:"data"`       // the data folder the test cases were read from
	Test         []TestCase      `json:"test"`
	// Deidentified: the test cases are named by pseudonyms, and Data is left out (it may
	// name the patients); the run folder's key maps them back.
	Deidentified bool `json:"deidentified,omitempty"`
	// Members, when set, make the model a union: each member predicts and the host
	// combines their predictions (the fields above then describe the chosen lane).
	Members []Member `json:"members,omitempty"`
	// Vote: the members' label maps are combined by a vote, not by their union.
	Vote bool `json:"vote,omitempty"`
}

// TestCase is one test case's id and the sha256 of each of its image files.
type TestCase struct {
	ID     string   `json:"id"`
	SHA256 []string `json:"sha256"`
}

// Package is an unpacked model package, read for predicting (see amid/host/export for
// its layout; export.Verify checks it).
type Package struct {
	Dir      string
	Manifest export.Manifest
	Model    ModelConfig
	Task     *task.Task
}

// Open reads the manifest, the model configuration and the task of the package folder dir.
func Open(dir string) (*Package, error) {
	p := &Package{Dir: dir}
	if err := fileio.ReadJSON(filepath.Join(dir, "manifest.json"), &p.Manifest); err != nil {
		return nil, err
	}
	if err := fileio.ReadJSON(filepath.Join(dir, filepath.FromSlash(export.FileModelConfig)), &p.Model); err != nil {
		return nil, err
	}
	t, err := task.Load(filepath.Join(dir, export.FileTask))
	if err != nil {
		return nil, err
	}
	p.Task = t
	return p, nil
}

// Predictor is the package's own plugin binary, trusted by the sha256 the manifest records
// (which the caller has verified), with opts and the compute identity the manifest records
// (the worker split, and the kernels when this CPU can run them: compute.Env).
func (p *Package) Predictor(opts supervisor.Options) (*Predictor, error) {
	man := p.Manifest
	bin := filepath.Join(p.Dir, filepath.FromSlash(man.Plugin.Binary))
	sum, err := fileio.SHA256(bin)
	if err != nil {
		return nil, err
	}
	if sum != man.Plugin.SHA256 {
		return nil, fmt.Errorf("plugin %s has sha256 %s, the manifest records %s", bin, sum, man.Plugin.SHA256)
	}
	if err := os.Chmod(bin, 0o755); err != nil && !os.IsPermission(err) {
		return nil, err
	}
	opts.Env = append(slices.Clip(opts.Env), compute.Env(man.Compute)...)
	entry := &catalog.Entry{Name: man.Plugin.Name, Path: bin, SHA256: sum, State: catalog.Trusted,
		Record: &store.Plugin{Name: man.Plugin.Name, Path: bin, TrustedSHA256: sum}}
	return &Predictor{Entry: entry, Opts: opts, Task: p.Task}, nil
}

// Predict predicts cases with the package's model (its union when it has members) into out.
func (p *Package) Predict(ctx context.Context, pr *Predictor, cases []task.Case, out string) (*Predicted, error) {
	mc := p.Model
	if len(mc.Members) > 0 {
		members := make([]Member, len(mc.Members))
		for i, m := range mc.Members {
			members[i] = m
			members[i].Checkpoint = filepath.Join(p.Dir, export.DirModel, m.Checkpoint)
		}
		return pr.Union(ctx, members, mc.Vote, cases, out)
	}
	return pr.One(ctx, mc.PluginConfig, filepath.Join(p.Dir, export.DirModel, mc.Checkpoint), cases, out)
}
