package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"amid/plugins/engine/data"
	"amid/plugins/metrics"
	"amid/plugins/protocol"
	"amid/viewer/imageio"
)

// BenchmarkForestTask trains the forest lane on each `make bench-quality` task folder
// named in AMID_FOREST_TASKS (comma-separated), predicts the task's test cases with the
// final checkpoint and prints their Dice against the task's answers: the mean over
// foreground classes of each case (a class absent from both prediction and answer is
// skipped), then the mean over cases. AMID_FOREST_TREES is the number of trees (32 by
// default); AMID_FOREST_MODALITY=mr normalises each image on its own instead of on the
// training set's global scale; AMID_FOREST_POST predicts with that post-processing
// (smooth, lcc, ...; none by default). Run it with
//
//	AMID_FOREST_TASKS=.cache/bench-quality/tasks/ch2-lobes,... go test ./plugins/segmentation -run '^$' -bench BenchmarkForestTask -benchtime 1x
//
// (a relative task path is taken from the repository root).
func BenchmarkForestTask(b *testing.B) {
	env := os.Getenv("AMID_FOREST_TASKS")
	if env == "" {
		b.Skip("set AMID_FOREST_TASKS to comma-separated bench-quality task folders, e.g. AMID_FOREST_TASKS=.cache/bench-quality/tasks/t1-brain go test ./plugins/segmentation -run '^$' -bench BenchmarkForestTask -benchtime 1x")
	}
	trees := 32
	if s := os.Getenv("AMID_FOREST_TREES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("AMID_FOREST_TREES=%q is not a positive number", s)
		}
		trees = n
	}
	modality := "global"
	if m := os.Getenv("AMID_FOREST_MODALITY"); m != "" {
		if m != "mr" && m != "global" {
			b.Fatalf("AMID_FOREST_MODALITY=%q is not mr or global", m)
		}
		modality = m
	}
	post := cmp.Or(os.Getenv("AMID_FOREST_POST"), postNone)
	for _, dir := range strings.Split(env, ",") {
		if dir = strings.TrimSpace(dir); dir == "" {
			continue
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join("..", "..", dir) // the test runs in plugins/segmentation
		}
		for range b.N {
			forestTask(b, dir, trees, modality, post)
		}
	}
}

// forestTask trains, predicts with post-processing post and scores one task folder.
func forestTask(b *testing.B, dir string, trees int, modality, post string) {
	b.Helper()
	name := filepath.Base(dir)
	labels, channels := taskSpec(b, dir)
	train := taskCases(b, filepath.Join(dir, "train"), channels, true)
	test := taskCases(b, filepath.Join(dir, "test"), channels, false)
	if len(train) == 0 || len(test) == 0 {
		b.Fatalf("%s: %d training and %d test cases", dir, len(train), len(test))
	}
	var ls []string
	for _, l := range labels {
		ls = append(ls, strconv.Itoa(l))
	}
	norm := ""
	if modality == "global" {
		low, high, mean, std := foregroundStats(b, train)
		norm = fmt.Sprintf(`,"ct":{"low":%g,"high":%g,"mean":%g,"std":%g}`, low, high, mean, std)
	}
	cfg := fmt.Appendf(nil, `{"lane":"forest","modality":%q%s,"coords":true,"labels":[%s],"steps":%d,"steps_per_epoch":8,"report_every":8,"spacing":[0,0,0]}`,
		modality, norm, strings.Join(ls, ","), trees)
	task := protocol.Task{Kind: "segmentation", Dims: 3}
	ctx := context.Background()
	start := time.Now()
	res, err := seg{}.Train(ctx, &protocol.TrainRequest{Task: task, Config: cfg, Train: train, WorkDir: b.TempDir(), Seed: 1},
		func(*protocol.Progress) error { return nil })
	if err != nil {
		b.Fatalf("%s: train: %v", name, err)
	}
	took := time.Since(start)
	predCfg := bytes.Replace(cfg, []byte(`"lane":"forest"`), fmt.Appendf(nil, `"lane":"forest","postprocess":%q`, post), 1)
	pr, err := seg{}.Predict(ctx, &protocol.PredictRequest{Task: task, Config: predCfg, Checkpoint: res.Checkpoint, Cases: test, OutputDir: b.TempDir()})
	if err != nil {
		b.Fatalf("%s: predict: %v", name, err)
	}
	if len(pr.Predictions) != len(test) {
		b.Fatalf("%s: %d predictions for %d test cases", name, len(pr.Predictions), len(test))
	}
	var per []float64
	for i, p := range pr.Predictions {
		id := p.CaseID
		if id == "" {
			id = test[i].ID
		}
		if len(p.Files) == 0 {
			b.Fatalf("%s: no prediction file for case %s", name, id)
		}
		per = append(per, caseDice(b, p.Files[0], filepath.Join(dir, "answers", id+"_seg.nii.gz"), labels))
	}
	dice := 0.0
	for _, d := range per {
		dice += d
	}
	dice /= float64(len(per))
	rounded := make([]float64, len(per))
	for i, d := range per {
		rounded[i] = math.Round(d*1e4) / 1e4
	}
	fmt.Printf("%s: forest of %d trees, post-processing %s, test Dice %.4f (per case %v), trained in %v\n", name, trees, post, dice, rounded, took.Round(time.Millisecond))
	b.ReportMetric(dice, "dice")
}

var (
	taskLabelRE   = regexp.MustCompile(`(?m)^\s*-\s*\{\s*value:\s*(-?\d+)`)
	taskChannelRE = regexp.MustCompile(`(?m)^channels:\s*\[([^\]]*)\]`)
)

// taskSpec reads a task.yaml's label values (background first) and channel names.
func taskSpec(b *testing.B, dir string) (labels []int, channels []string) {
	b.Helper()
	y, err := os.ReadFile(filepath.Join(dir, "task.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range taskLabelRE.FindAllSubmatch(y, -1) {
		v, err := strconv.Atoi(string(m[1]))
		if err != nil {
			b.Fatal(err)
		}
		labels = append(labels, v)
	}
	slices.Sort(labels)
	if len(labels) < 2 {
		b.Fatalf("%s/task.yaml lists labels %v, want at least two", dir, labels)
	}
	if m := taskChannelRE.FindSubmatch(y); m != nil {
		for _, c := range strings.Split(string(m[1]), ",") {
			if c = strings.Trim(strings.TrimSpace(c), `"'`); c != "" {
				channels = append(channels, c)
			}
		}
	}
	return labels, channels
}

// taskCases lists the cases of a task's train or test folder: {id}_{channel}.nii.gz per
// channel, and {id}_seg.nii.gz as the label when labelled. With no channels from the
// task.yaml, each case's one file that is not _seg is its image.
func taskCases(b *testing.B, dir string, channels []string, labelled bool) []protocol.Case {
	b.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.nii.gz"))
	if err != nil {
		b.Fatal(err)
	}
	ids := map[string][]string{} // id -> its image files
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".nii.gz")
		i := strings.LastIndex(base, "_")
		if i <= 0 || base[i+1:] == "seg" {
			continue
		}
		ids[base[:i]] = append(ids[base[:i]], f)
	}
	var cases []protocol.Case
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		c := protocol.Case{ID: id, Images: ids[id]}
		if len(channels) > 0 {
			c.Images = nil
			for _, ch := range channels {
				c.Images = append(c.Images, filepath.Join(dir, id+"_"+ch+".nii.gz"))
			}
		} else if len(c.Images) != 1 {
			b.Fatalf("%s: case %s has images %v, want one", dir, id, c.Images)
		}
		if labelled {
			c.Label = filepath.Join(dir, id+"_seg.nii.gz")
		}
		cases = append(cases, c)
	}
	return cases
}

// foregroundStats is the CT normalisation's statistics (data.CTFit) of the first
// channel under non-zero labels over the training cases.
func foregroundStats(b *testing.B, cases []protocol.Case) (low, high, mean, std float64) {
	b.Helper()
	var fit data.CTFit
	for _, c := range cases {
		img, err := imageio.Read(c.Images[0])
		if err != nil {
			b.Fatal(err)
		}
		lab, err := imageio.Read(c.Label)
		if err != nil {
			b.Fatal(err)
		}
		if err := fit.Add(c.ID, img, lab); err != nil {
			b.Fatal(err)
		}
	}
	st, err := fit.Stats()
	if err != nil {
		b.Fatal(err)
	}
	return st.Lo, st.Hi, st.Mean, st.Std
}

// caseDice is the mean Dice over the foreground classes of one case as the plugin's
// validation computes it (metrics.DiceUnion: a class absent from both the prediction and
// the answer is skipped; 1 when every class is).
func caseDice(b *testing.B, predPath, answerPath string, labels []int) float64 {
	b.Helper()
	var maps [2][]int32
	for i, path := range []string{predPath, answerPath} {
		v, err := imageio.Read(path)
		if err != nil {
			b.Fatal(err)
		}
		if maps[i], err = classIndex(v, labels); err != nil {
			b.Fatalf("%s: %v", path, err)
		}
	}
	d, err := classDice(maps[0], maps[1], metrics.DiceUnion)
	if err != nil {
		b.Fatalf("%s against %s: %v", predPath, answerPath, err)
	}
	return d
}
