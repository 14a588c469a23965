// Package plugintest is the conformance suite every AMID task plugin runs against itself:
//
//	func TestConformance(t *testing.T) { plugintest.Run(t, "/path/to/amid-plugin-NAME", nil) }
//
// Run starts the binary the way the host does (go-plugin, gRPC, mutual TLS with the host's
// per-start credentials, which the plugin must use) and checks Describe, Plan, Train
// (progress, explicit final result, checkpoint on disk with a matching sha256), Predict (a
// file for every case), cancellation (Train stops within two seconds of a cancel and
// keeps its last checkpoint), the time limit (Train ends normally when it has elapsed),
// resuming (a run resumed from an epoch checkpoint reports the uninterrupted run's losses
// bit for bit: CheckResume) and rounds (a run stopped at TrainRequest.Until and continued
// from its final checkpoint does too: CheckRounds).
package plugintest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"amid/assets/fileio"
	"amid/plugins/protocol"
	"amid/plugins/protocol/schema"
	"amid/plugins/sdk"
)

// CancelGrace is how long a plugin may take to end Train after the host cancels it. The
// host kills a plugin that takes longer.
const CancelGrace = 2 * time.Second

// Options tunes the suite. The zero value (or nil) works for a plugin that accepts any
// files as images.
type Options struct {
	// Task to plan and train; default: the first kind and dimension the plugin describes.
	Task *protocol.Task
	// Fingerprint for Plan; default: a small JSON object.
	Fingerprint []byte
	// Train and Predict cases; default: three synthetic 4 KiB byte images with labels.
	Cases []protocol.Case
	// TrainConfig overrides the configuration trained; default: the first planned candidate.
	TrainConfig []byte
	// CancelConfig overrides the configuration used for the cancel check; default: the last
	// planned candidate. It should train long enough to be cancelled mid-way.
	CancelConfig []byte
	// RoundsConfig is the configuration the resume and rounds checks train (three runs and
	// a half, so keep it to a few steps); default: the configuration trained. It must
	// report losses at every step (report every 1) and write an epoch checkpoint before
	// its last step.
	RoundsConfig []byte
	// Until is the last step of the rounds check's first round; default: half the steps
	// of RoundsConfig's run.
	Until int64
	// NoRounds, when not empty, says why the configurations trained take no steps that
	// could be resumed or split (a lane whose only step counts the labels): the resume and
	// rounds checks are left out, and the reason is logged.
	NoRounds string
}

// Start launches the plugin binary and returns its Plugin client; the process is killed
// when the test ends.
func Start(t testing.TB, binary string) protocol.Plugin {
	t.Helper()
	creds, err := protocol.NewCredentials()
	if err != nil {
		t.Fatalf("start %s: %v", binary, err)
	}
	cmd := exec.Command(binary)
	cmd.Env = append(os.Environ(), creds.Env...)
	c := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  protocol.Handshake,
		Plugins:          protocol.PluginSet(nil),
		Cmd:              cmd,
		SkipHostEnv:      true, // in cmd.Env, before the credentials
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		TLSConfig:        creds.Config,
		StartTimeout:     10 * time.Second,
		Logger:           hclog.New(&hclog.LoggerOptions{Name: filepath.Base(binary), Output: os.Stderr, Level: hclog.Warn}),
	})
	t.Cleanup(c.Kill)
	rpc, err := c.Client()
	if err != nil {
		t.Fatalf("start %s: %v", binary, err)
	}
	if err := rpc.Ping(); err != nil {
		t.Fatalf("start %s: mutual TLS: %v", binary, err)
	}
	if creds.Legacy() {
		t.Errorf("%s uses go-plugin's automatic mutual TLS, not the host's credentials: rebuild it against the current amid/plugins/sdk", binary)
	}
	raw, err := rpc.Dispense(protocol.PluginName)
	if err != nil {
		t.Fatalf("dispense %s: %v", binary, err)
	}
	return raw.(protocol.Plugin)
}

// Run checks the plugin binary against the protocol's rules.
func Run(t *testing.T, binary string, opts *Options) {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	p := Start(t, binary)
	ctx := context.Background()

	desc, err := p.Describe(ctx, &protocol.DescribeRequest{})
	if err != nil {
		t.Fatalf("Describe: %v", err)
	}
	cfgSchema, err := schema.Describe(desc)
	if err != nil {
		t.Fatalf("Describe: %v", err)
	}
	if want := "amid-plugin-" + desc.Name; strings.TrimSuffix(filepath.Base(binary), ".exe") != want {
		t.Errorf("plugin %q is in file %s, want %s", desc.Name, filepath.Base(binary), want)
	}

	task := protocol.Task{Kind: desc.Tasks[0].Kind, Metric: firstOr(desc.Metrics, "")}
	if len(desc.Tasks[0].Dims) > 0 {
		task.Dims = desc.Tasks[0].Dims[0]
	}
	if opts.Task != nil {
		task = *opts.Task
	}
	fp := opts.Fingerprint
	if fp == nil {
		fp = []byte(`{"cases":3,"modalities":["CT"],"median_shape":[16,16,16]}`)
	}
	plan, err := p.Plan(ctx, &protocol.PlanRequest{Fingerprint: fp, Task: task})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	if err := plan.Validate(cfgSchema); err != nil {
		t.Fatalf("Plan: %v", err)
	}

	cases := opts.Cases
	if cases == nil {
		cases = synthCases(t)
	}
	cfg := opts.TrainConfig
	if cfg == nil {
		cfg = plan.Candidates[0].Config
	}
	if err := cfgSchema.Check(cfg); err != nil {
		t.Fatalf("train configuration: %v", err)
	}
	work := t.TempDir()
	res := train(t, p, &protocol.TrainRequest{LaneID: "conformance", Task: task, Config: cfg, Train: cases, Validation: cases[:1], WorkDir: work, Seed: 1})

	out := t.TempDir()
	pred, err := p.Predict(ctx, &protocol.PredictRequest{Task: task, Config: cfg, Checkpoint: res.Checkpoint, Cases: cases, OutputDir: out})
	if err != nil {
		t.Fatalf("Predict: %v", err)
	}
	seen := map[string]bool{}
	for _, pr := range pred.Predictions {
		seen[pr.CaseID] = true
		if len(pr.Files) == 0 {
			t.Errorf("Predict: case %s has no files", pr.CaseID)
		}
		for _, f := range pr.Files {
			if !fileio.Within(out, f) {
				t.Errorf("Predict: file %s is outside the output folder %s", f, out)
			}
			if _, err := os.Stat(f); err != nil {
				t.Errorf("Predict: case %s: %v", pr.CaseID, err)
			}
		}
	}
	for _, c := range cases {
		if !seen[c.ID] {
			t.Errorf("Predict: no prediction for case %s", c.ID)
		}
	}

	cancelCfg := opts.CancelConfig
	if cancelCfg == nil {
		cancelCfg = plan.Candidates[len(plan.Candidates)-1].Config
	}
	checkCancel(t, p, &protocol.TrainRequest{LaneID: "cancel", Task: task, Config: cancelCfg, Train: cases, WorkDir: t.TempDir(), Seed: 1})
	checkTimeLimit(t, p, &protocol.TrainRequest{LaneID: "limit", Task: task, Config: cancelCfg, Train: cases, Validation: cases[:1], WorkDir: t.TempDir(), Seed: 1, TimeLimit: TimeLimit})

	if opts.NoRounds != "" {
		t.Logf("resume and rounds: left out: %s", opts.NoRounds)
		return
	}
	roundsCfg := opts.RoundsConfig
	if roundsCfg == nil {
		roundsCfg = cfg
	}
	if err := cfgSchema.Check(roundsCfg); err != nil {
		t.Fatalf("rounds configuration: %v", err)
	}
	checkTraining(t, p.Train, &protocol.TrainRequest{LaneID: "rounds", Task: task, Config: roundsCfg, Train: cases, WorkDir: t.TempDir(), Seed: 1}, opts.Until)
}

// TimeLimit is the training time limit the conformance suite sets on its longest
// configuration, and TimeLimitGrace how much longer than that Train may take to end
// normally (final checkpoint and validation included).
var (
	TimeLimit      = time.Second
	TimeLimitGrace = 45 * time.Second
)

// checkTimeLimit trains the longest configuration with a time limit and checks that Train
// ends normally, with a result, rather than running on until the host gives up, and that
// its last progress event is at the step it stopped at (what the host's monitor shows).
func checkTimeLimit(t *testing.T, p protocol.Plugin, req *protocol.TrainRequest) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), req.TimeLimit+TimeLimitGrace)
	defer cancel()
	var last int64
	res, err := p.Train(ctx, req, func(pr *protocol.Progress) error { last = pr.Step; return nil })
	if ctx.Err() != nil {
		t.Fatalf("time limit: Train ran past TrainRequest.TimeLimit (%v) plus %v; it must stop stepping when the limit has elapsed and finish normally (see sdk.Clock)", req.TimeLimit, TimeLimitGrace)
	}
	if err != nil {
		t.Fatalf("time limit: Train returned an error instead of finishing normally at its time limit: %v", err)
	}
	if err := res.Validate(); err != nil {
		t.Fatalf("time limit: %v", err)
	}
	if last != res.Steps {
		t.Errorf("time limit: the last progress event was at step %d, the result at step %d; report the step training stopped at", last, res.Steps)
	}
}

// train runs Train and checks its progress and its final result.
func train(t *testing.T, p protocol.Plugin, req *protocol.TrainRequest) *protocol.TrainResult {
	t.Helper()
	var n int
	var prev int64
	res, err := p.Train(context.Background(), req, func(pr *protocol.Progress) error {
		n++
		if err := pr.Validate(prev); err != nil {
			return err
		}
		prev = pr.Step
		if pr.Checkpoint != "" && !fileio.Within(req.WorkDir, pr.Checkpoint) {
			return fmt.Errorf("checkpoint %s is outside the work folder %s", pr.Checkpoint, req.WorkDir)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Train: %v", err)
	}
	if n == 0 {
		t.Error("Train: no progress events")
	}
	if err := res.Validate(); err != nil {
		t.Fatalf("Train: %v", err)
	}
	if !fileio.Within(req.WorkDir, res.Checkpoint) {
		t.Errorf("Train: final checkpoint %s is outside the work folder %s", res.Checkpoint, req.WorkDir)
	}
	sum, err := sdk.FileSHA256(res.Checkpoint)
	if err != nil {
		t.Fatalf("Train: final checkpoint: %v", err)
	}
	if sum != res.SHA256 {
		t.Errorf("Train: checkpoint %s has sha256 %s, the result says %s", res.Checkpoint, sum, res.SHA256)
	}
	return res
}

// checkCancel cancels Train after its first progress event and checks that it ends within
// CancelGrace and that the last checkpoint it reported is still on disk.
func checkCancel(t *testing.T, p protocol.Plugin, req *protocol.TrainRequest) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cancelled time.Time
	var last string
	done := make(chan error, 1)
	go func() {
		_, err := p.Train(ctx, req, func(pr *protocol.Progress) error {
			if pr.Checkpoint != "" {
				last = pr.Checkpoint
			}
			if cancelled.IsZero() && (last != "" || pr.Step >= 3) {
				cancelled = time.Now()
				cancel()
			}
			return nil
		})
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("cancel: Train neither finished nor stopped within a minute")
	}
	if cancelled.IsZero() {
		t.Log("cancel: the cancel configuration finished before a cancel; use Options.CancelConfig for a longer run")
		return
	}
	if waited := time.Since(cancelled); waited > CancelGrace {
		t.Errorf("cancel: Train took %v to stop, the protocol allows %v", waited, CancelGrace)
	}
	if err == nil {
		t.Log("cancel: Train finished although cancelled")
	} else if !errors.Is(err, protocol.ErrIncomplete) && !errors.Is(err, context.Canceled) {
		t.Errorf("cancel: unexpected error %v", err)
	}
	if last != "" {
		if _, err := os.Stat(last); err != nil {
			t.Errorf("cancel: the last checkpoint is gone: %v", err)
		}
	}
}

// synthCases writes three small byte images and labels. The bytes are a fixed ramp so a
// plugin sees the same data on every run.
func synthCases(t *testing.T) []protocol.Case {
	dir := t.TempDir()
	var cs []protocol.Case
	for i := range 3 {
		img := make([]byte, 4096)
		lab := make([]byte, 4096)
		for j := range img {
			img[j] = byte((j*7 + i*31) % 251)
			if img[j] > 128 {
				lab[j] = 1
			}
		}
		id := fmt.Sprintf("case%03d", i)
		ip := filepath.Join(dir, id+"_0000.raw")
		lp := filepath.Join(dir, id+"_label.raw")
		if err := os.WriteFile(ip, img, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(lp, lab, 0o644); err != nil {
			t.Fatal(err)
		}
		cs = append(cs, protocol.Case{ID: id, Images: []string{ip}, Label: lp})
	}
	return cs
}

func firstOr(s []string, d string) string {
	if len(s) > 0 {
		return s[0]
	}
	return d
}
