package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/goccy/go-yaml"

	"amid/assets"
	"amid/host/ingest"
	"amid/host/synth"
	"amid/host/synth/rexmle"
	"amid/host/task"
	"amid/plugins/taskspec"
)

// plain names, for each task kind, the challenge whose generated data a plain task of
// that kind borrows and the metric a user would name for it. Segmentation has no entry:
// the demo task (amid/host/synth.Demo) is a plain segmentation task already.
var plain = map[string]struct{ challenge, metric string }{
	taskspec.Detection:      {"dentex", "ap_mean"},
	taskspec.Classification: {"topcow-track1-task3", "balanced_accuracy"},
	taskspec.IQA:            {"ldct-iqa", "plcc_srocc_krocc"},
	taskspec.Enhancement:    {"usenhance", "psnr"},
}

// PlainKinds are the task kinds Plain writes, in a fixed order.
func PlainKinds() []string {
	kinds := []string{taskspec.Segmentation}
	for k := range plain {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds[1:])
	return kinds
}

// Plain writes into out a task of kind as a user would define it for their own data, not
// a ReX-MLE challenge: no challenge or leaderboard, labels in AMID's own formats (an
// annotation JSON per case, train/labels/{id}.json, for detection and classification;
// images for segmentation and enhancement; a CSV of scores for IQA), the metric a user
// would name, and a submission that names no format (so the default for the kind). The
// images are generated (the challenge's generator of amid/host/synth/rexmle, or the demo's
// head CTs). It returns the task file's path.
func Plain(ctx context.Context, kind, out string, cases int, seed int64) (string, error) {
	if kind == taskspec.Segmentation {
		if err := synth.Demo(out, cases, uint64(seed)); err != nil {
			return "", err
		}
		return filepath.Join(out, "task.yaml"), nil
	}
	p, ok := plain[kind]
	if !ok {
		return "", fmt.Errorf("bench: no plain task of kind %q (one of %v)", kind, PlainKinds())
	}
	gen := filepath.Join(out, "generated")
	if err := rexmle.Generate(p.challenge, gen, rexmle.Options{Cases: cases, Seed: seed}); err != nil {
		return "", err
	}
	b, err := assets.RexMLETask(p.challenge)
	if err != nil {
		return "", err
	}
	ch, err := task.Parse(b)
	if err != nil {
		return "", err
	}
	public := filepath.Join(gen, "public")
	ds, err := ch.Resolve(public)
	if err != nil {
		return "", fmt.Errorf("bench: plain %s task: %w", kind, err)
	}
	label := map[string]any{"path": ch.Data.Train.Label.Path, "format": ch.Data.Train.Label.Format}
	if l := ch.Data.Train.Label; l.Format == task.LabelCSV {
		label["id_column"], label["value_column"] = l.IDColumn, l.ValueColumn
	}
	if kind == taskspec.Detection || kind == taskspec.Classification {
		// The challenge's labels become AMID's annotation JSON, one file per case.
		canon, err := ingest.Labels(ctx, ch, ds.Train, filepath.Join(out, "ingest"))
		if err != nil {
			return "", err
		}
		for _, c := range ds.Train {
			b, err := os.ReadFile(canon[c.ID])
			if err != nil {
				return "", err
			}
			dst := filepath.Join(public, "train", "labels", c.ID+".json")
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return "", err
			}
			if err := os.WriteFile(dst, b, 0o644); err != nil {
				return "", err
			}
		}
		if err := os.RemoveAll(filepath.Join(out, "ingest")); err != nil {
			return "", err
		}
		label = map[string]any{"path": "train/labels/{id}.json", "format": task.LabelAnnotation}
	}
	def := yaml.MapSlice{
		{Key: "id", Value: "plain-" + kind},
		{Key: "title", Value: "A plain " + kind + " task on generated images"},
		{Key: "kind", Value: kind},
		{Key: "dims", Value: ch.Dims},
		{Key: "modality", Value: ch.Modality},
		{Key: "channels", Value: ch.Channels},
	}
	if len(ch.Attributes) > 0 {
		var attrs []map[string]any
		for _, a := range ch.Attributes {
			attrs = append(attrs, map[string]any{"name": a.Name, "classes": a.Classes})
		}
		def = append(def, yaml.MapItem{Key: "attributes", Value: attrs})
	}
	if s := ch.Score; s != nil {
		def = append(def, yaml.MapItem{Key: "score", Value: map[string]float64{"min": s.Min, "max": s.Max, "step": s.Step}})
	}
	sub := yaml.MapSlice{{Key: "id_column", Value: "case_id"}}
	if kind == taskspec.IQA {
		sub = append(sub, yaml.MapItem{Key: "columns", Value: []string{"case_id", "score"}}, yaml.MapItem{Key: "value_column", Value: "score"})
	} else {
		ext := ".json"
		if kind == taskspec.Enhancement {
			ext = task.Suffix(ch.Submission.Path)
		}
		sub = append(sub, yaml.MapItem{Key: "columns", Value: []string{"case_id", "prediction"}},
			yaml.MapItem{Key: "file_column", Value: "prediction"}, yaml.MapItem{Key: "path", Value: "predictions/{id}" + ext})
	}
	def = append(def,
		yaml.MapItem{Key: "data", Value: yaml.MapSlice{
			{Key: "train", Value: yaml.MapSlice{{Key: "images", Value: ch.Data.Train.Images}, {Key: "label", Value: label}}},
			{Key: "test", Value: yaml.MapSlice{{Key: "images", Value: ch.Data.Test.Images}}},
		}},
		yaml.MapItem{Key: "metric", Value: map[string]string{"name": p.metric}},
		yaml.MapItem{Key: "submission", Value: sub},
	)
	text, err := yaml.Marshal(def)
	if err != nil {
		return "", err
	}
	// The task runs on the generated public folder: the task file lies there.
	path := filepath.Join(public, "task.yaml")
	if err := os.WriteFile(path, text, 0o644); err != nil {
		return "", err
	}
	t, err := task.Load(path)
	if err != nil {
		return "", fmt.Errorf("bench: the plain %s task does not read back: %w", kind, err)
	}
	if t.Challenge != "" || slices.Contains([]string{task.LabelDENTEX, task.LabelTopCoWEdges}, t.Data.Train.Label.Format) {
		return "", fmt.Errorf("bench: the plain %s task still holds the challenge's formats", kind)
	}
	return path, nil
}
