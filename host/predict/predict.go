// Package predict runs a trained model on cases: one checkpoint through its plugin, a
// union or vote of several ([Predictor]), the channels of each case brought onto one grid
// first ([Align]), and a model package opened, checked and run on cases it never saw
// ([Package], [Apply]). The run's final phases, `amid reproduce` and `amid predict` all
// predict through it, so a package predicts a new patient exactly as its run predicted the
// test set.
package predict

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"amid/host/catalog"
	"amid/host/supervisor"
	"amid/host/task"
	"amid/plugins/compute"
	"amid/plugins/protocol"
)

// Predicted is what a prediction wrote: the files per case, how sure the model is of each
// case (where its plugin says: protocol.Prediction.Confidence), each case's probability
// map (when asked for and its plugin writes one: protocol.Prediction.Probabilities), and
// what computed them.
type Predicted struct {
	Files         map[string][]string
	Confidence    map[string]float64
	Probabilities map[string]string
	Compute       compute.Identity
}

// Member is one model of a union ensemble: a lane's checkpoint and configuration.
type Member struct {
	Lane         string          `json:"lane"`
	PluginConfig json.RawMessage `json:"plugin_config"`
	Checkpoint   string          `json:"checkpoint"` // a path in a run; a file name under model/ in a package
	SHA256       string          `json:"sha256"`
}

// Predictor predicts the cases of Task with the plugin of Entry.
type Predictor struct {
	Entry *catalog.Entry
	Opts  supervisor.Options
	Task  *task.Task
	// Probabilities asks the plugin for each case's probability map too (a segmentation
	// plugin's; others write none).
	Probabilities bool
}

// Cases are the protocol's cases of cs, each with its label from labels (nil: none).
func Cases(cs []task.Case, labels map[string]string) []protocol.Case {
	out := make([]protocol.Case, len(cs))
	for i, c := range cs {
		out[i] = protocol.Case{ID: c.ID, Images: c.Images}
		if labels != nil {
			out[i].Label = labels[c.ID]
		}
	}
	return out
}

// One starts the plugin, writes predictions of cases with checkpoint ckpt and plugin
// configuration cfg into out (emptied first) and returns the files per case id. It checks
// that every case has a file inside out.
func (p *Predictor) One(ctx context.Context, cfg []byte, ckpt string, cases []task.Case, out string) (*Predicted, error) {
	if err := os.RemoveAll(out); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	proc, err := supervisor.Start(ctx, p.Entry, p.Opts)
	if err != nil {
		return nil, err
	}
	defer proc.Kill()
	spec, err := json.Marshal(p.Task.Spec())
	if err != nil {
		return nil, err
	}
	t := p.Task
	req := &protocol.PredictRequest{
		Task: protocol.Task{Kind: t.Kind, Dims: t.Dims, Metric: t.Metric.Name, Spec: spec}, Config: cfg, Checkpoint: ckpt,
		Cases: Cases(cases, nil), OutputDir: out, Probabilities: p.Probabilities,
	}
	if p.Opts.Sent != nil {
		p.Opts.Sent(req)
	}
	resp, err := proc.Predict(ctx, req)
	if err != nil {
		return nil, err
	}
	files, conf, maps := map[string][]string{}, map[string]float64{}, map[string]string{}
	for _, pr := range resp.Predictions {
		written := pr.Files
		if pr.Probabilities != "" {
			written = append(slices.Clip(written), pr.Probabilities)
			maps[pr.CaseID] = pr.Probabilities
		}
		for _, f := range written {
			rel, err := filepath.Rel(out, f)
			if err != nil || rel == ".." || len(rel) > 2 && rel[:3] == "../" {
				return nil, fmt.Errorf("plugin %s wrote %s outside its output folder %s", p.Entry.Name, f, out)
			}
		}
		files[pr.CaseID] = pr.Files
		if c := pr.Confidence; c != nil {
			if !(*c >= 0 && *c <= 1) {
				return nil, fmt.Errorf("plugin %s gave case %s a confidence of %v, which is not between 0 and 1", p.Entry.Name, pr.CaseID, *c)
			}
			conf[pr.CaseID] = *c
		}
	}
	for _, c := range cases {
		if len(files[c.ID]) == 0 {
			return nil, fmt.Errorf("plugin %s wrote no prediction for case %s", p.Entry.Name, c.ID)
		}
	}
	return &Predicted{Files: files, Confidence: conf, Probabilities: maps, Compute: resp.Compute}, nil
}

// Union predicts cases with every member and writes their union (or, with vote, their
// vote) into out. The members run in processes of the same plugin on this machine, so the
// union's compute identity is theirs (the first member's). A case's confidence is the
// members' mean, and its probability map (Predictor.Probabilities) their maps' voxelwise
// mean, when every member gives one; the mean map's most probable label may differ from
// the vote's where the members disagree.
func (p *Predictor) Union(ctx context.Context, members []Member, vote bool, cases []task.Case, out string) (*Predicted, error) {
	if err := os.RemoveAll(out); err != nil {
		return nil, err
	}
	var all []*Predicted
	for _, m := range members {
		pr, err := p.One(ctx, m.PluginConfig, m.Checkpoint, cases, filepath.Join(out+".members", m.Lane))
		if err != nil {
			return nil, err
		}
		all = append(all, pr)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	res, conf, maps := map[string][]string{}, map[string]float64{}, map[string]string{}
	for _, c := range cases {
		var files, probs []string
		var sum float64
		sure := 0
		for _, pr := range all {
			files = append(files, pr.Files[c.ID][0])
			if v, ok := pr.Confidence[c.ID]; ok {
				sum += v
				sure++
			}
			if m, ok := pr.Probabilities[c.ID]; ok {
				probs = append(probs, m)
			}
		}
		if sure == len(all) {
			conf[c.ID] = sum / float64(sure) // the members' mean, when every member says
		}
		f, err := combine(p.Task.Spec(), files, out, vote)
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", c.ID, err)
		}
		res[c.ID] = []string{f}
		if len(probs) == len(all) {
			m := filepath.Join(out, filepath.Base(probs[0]))
			if err := reduce(probs, m, false); err != nil {
				return nil, fmt.Errorf("case %s: probability maps: %w", c.ID, err)
			}
			maps[c.ID] = m
		}
	}
	return &Predicted{Files: res, Confidence: conf, Probabilities: maps, Compute: all[0].Compute}, os.RemoveAll(out + ".members")
}
