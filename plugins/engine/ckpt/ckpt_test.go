package ckpt

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"amid/plugins/engine"
)

// tinyArch is a 3-stage 2D U-Net small enough to train in milliseconds.
func tinyArch(norm engine.NormKind) engine.UNetConfig {
	return engine.UNetConfig{In: 1, Classes: 2, Widths: []int{4, 8, 8}, Convs: 2, Slope: 0.01, Norm: norm}
}

// run is a U-Net with its AdamW on a fixed random batch of 2 samples of 16×16.
type run struct {
	u   *engine.UNet
	opt *engine.Adam
}

func newRun(t testing.TB, arch engine.UNetConfig, seed uint64) run {
	t.Helper()
	// The portable backend's pure-Go SGEMM gives the same bits on every x86-64 CPU, so
	// TestSeedFile's committed checkpoint reproduces whatever kernels OpenBLAS would pick
	// (with OpenBLAS, SkylakeX and Haswell kernels differ in the last bits after a step).
	be := engine.NewPortableCPU(2)
	u, err := engine.BuildUNet(be, arch, 2, [3]int{1, 16, 16}, seed)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 7)) // the batch is the same whatever the weights' seed
	lab := make([]int32, len(u.Input.Data))
	for i := range u.Input.Data {
		u.Input.Data[i] = float32(r.NormFloat64())
		if u.Input.Data[i] > 0.3 {
			lab[i] = 1
		}
	}
	if err := u.Loss.SetLabels(lab); err != nil {
		t.Fatal(err)
	}
	return run{u, engine.NewAdamW(be, u.Params(), 1e-2, 1e-4)}
}

func (r run) train(steps int) {
	for range steps {
		r.u.Forward()
		r.u.Backward()
		engine.ClipGradNorm(r.u.Params(), 12)
		r.opt.Step()
	}
}

type trainCfg struct {
	LR    float64 `json:"lr"`
	Steps int     `json:"steps"`
}

// TestResumeBitIdentical trains N steps, saves, loads into a model built from another
// seed with a fresh optimizer, trains M more, and compares every bit with N+M steps
// straight, for instance norm and for batch norm (running statistics travel too).
func TestResumeBitIdentical(t *testing.T) {
	const n, m = 3, 4
	for _, norm := range []engine.NormKind{engine.Instance, engine.Batch} {
		arch := tinyArch(norm)
		straight := newRun(t, arch, 1)
		straight.train(n + m)

		first := newRun(t, arch, 1)
		first.train(n)
		path := filepath.Join(t.TempDir(), "model.ckpt")
		state := []byte{0, 1, 2, 255} // opaque bytes: the data order's state
		if err := Save(path, Checkpoint{Arch: arch, Train: trainCfg{1e-2, n + m}, Epoch: 1, Step: n, Model: first.u, Opt: first.opt, DataState: state}); err != nil {
			t.Fatal(err)
		}
		resumed := newRun(t, arch, 99)
		if resumed.u.Params()[0].Data[0] == first.u.Params()[0].Data[0] {
			t.Fatal("models from different seeds start equal; the test would prove nothing")
		}
		man, err := Load(path, arch, resumed.u, resumed.opt)
		if err != nil {
			t.Fatal(err)
		}
		var tc trainCfg
		if err := json.Unmarshal(man.Train, &tc); err != nil || tc != (trainCfg{1e-2, n + m}) {
			t.Fatalf("training configuration %s (%v)", man.Train, err)
		}
		if man.Step != n || man.Epoch != 1 || man.EngineVersion != engine.Version || man.OptimizerStep != n {
			t.Fatalf("manifest step %d epoch %d version %q optimizer step %d", man.Step, man.Epoch, man.EngineVersion, man.OptimizerStep)
		}
		if !bytes.Equal(man.DataState, state) {
			t.Fatalf("data state %v, saved %v", man.DataState, state)
		}
		resumed.train(m)
		for i, p := range straight.u.Params() {
			q := resumed.u.Params()[i]
			for j := range p.Data {
				if p.Data[j] != q.Data[j] {
					t.Fatalf("norm %d: %s[%d] = %g resumed, %g straight", norm, p.Name, j, q.Data[j], p.Data[j])
				}
			}
		}
		for i, b := range straight.u.Buffers() {
			if !slicesEqual(b.Data, resumed.u.Buffers()[i].Data) {
				t.Fatalf("buffer %s differs after resuming", b.Name)
			}
		}
	}
}

func slicesEqual(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestArchMismatch refuses checkpoints of other architectures, naming the difference.
func TestArchMismatch(t *testing.T) {
	arch := tinyArch(engine.Instance)
	src := newRun(t, arch, 1)
	path := filepath.Join(t.TempDir(), "model.ckpt")
	if err := Save(path, Checkpoint{Arch: arch, Model: src.u, Opt: src.opt}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		edit func(*engine.UNetConfig)
		want string
	}{
		{func(c *engine.UNetConfig) { c.Widths = []int{2, 8, 8} }, "checkpoint has 4 base filters, model has 2"},
		{func(c *engine.UNetConfig) { c.Widths = []int{4, 8, 16} }, "checkpoint has 8 filters at stage 2, model has 16"},
		{func(c *engine.UNetConfig) { c.Widths = []int{4, 8} }, "checkpoint has 3 stages, model has 2"},
		{func(c *engine.UNetConfig) { c.Classes = 3 }, "checkpoint has 2 classes, model has 3"},
		{func(c *engine.UNetConfig) { c.Norm = engine.Batch }, "checkpoint uses instance norm, model uses batch norm"},
		{func(c *engine.UNetConfig) { c.MaxPool = true }, "checkpoint down-samples with strided convolutions, model with max-pooling"},
	} {
		other := arch
		tc.edit(&other)
		dst := newRun(t, other, 2)
		before := dst.u.Params()[0].Data[0]
		_, err := Load(path, other, dst.u, dst.opt)
		if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("want %q, got %v", tc.want, err)
		}
		if dst.u.Params()[0].Data[0] != before {
			t.Errorf("refused load changed the model")
		}
	}
	// Weights only: a model without optimizer loads the same file.
	dst := newRun(t, arch, 2)
	if _, err := Load(path, arch, dst.u, nil); err != nil {
		t.Fatal(err)
	}
	if dst.u.Params()[3].Data[1] != src.u.Params()[3].Data[1] {
		t.Fatal("weights-only load did not copy the weights")
	}
	// An SGD cannot take Adam's state.
	sgd := engine.NewSGD(engine.NewCPU(1), dst.u.Params(), 0.1)
	if _, err := Load(path, arch, dst.u, sgd); !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "adam optimizer state, optimizer is sgd") {
		t.Fatalf("Adam state into SGD: %v", err)
	}
}

// TestDamaged cuts, pads and flips the file: each gives ErrFormat naming the file.
func TestDamaged(t *testing.T) {
	arch := tinyArch(engine.Instance)
	src := newRun(t, arch, 1)
	dir := t.TempDir()
	path := filepath.Join(dir, "model.ckpt")
	if err := Save(path, Checkpoint{Arch: arch, Model: src.u, Opt: src.opt}); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("save left %d files in the folder, want the checkpoint alone", len(ents))
	}
	flip := bytes.Clone(good)
	flip[len(flip)-5] ^= 1
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "header cut short"},
		{"in header", good[:10], "header cut short"},
		{"in manifest", good[:100], "manifest cut short"},
		{"in payload", good[:len(good)-4], "truncated"},
		{"padded", append(bytes.Clone(good), 0), "truncated or padded"},
		{"flipped bit", flip, "corrupt file"},
		{"not a checkpoint", []byte("PK\x03\x04 a zip file, not a checkpoint"), "magic"},
	} {
		p := filepath.Join(dir, "bad.ckpt")
		if err := os.WriteFile(p, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p, arch, newRun(t, arch, 2).u, nil)
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: want %q, got %v", tc.name, tc.want, err)
		}
	}
	if _, err := Load(filepath.Join(dir, "missing.ckpt"), arch, src.u, nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// TestRead reads a checkpoint's weights without its network (batch norm, so that buffers
// travel too): every parameter and buffer in the file's order and value, no optimizer
// state; a damaged payload is refused.
func TestRead(t *testing.T) {
	arch := tinyArch(engine.Batch)
	r := newRun(t, arch, 3)
	r.train(2)
	dir := t.TempDir()
	path := filepath.Join(dir, "model.ckpt")
	if err := Save(path, Checkpoint{Arch: arch, Model: r.u, Opt: r.opt}); err != nil {
		t.Fatal(err)
	}
	m, s, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if m.Optimizer != "adam" || len(s.Params()) != len(r.u.Params()) || len(s.Buffers()) != len(r.u.Buffers()) || len(s.Buffers()) == 0 {
		t.Fatalf("read %s, %d params, %d buffers; want adam, %d and %d", m.Optimizer, len(s.Params()), len(s.Buffers()), len(r.u.Params()), len(r.u.Buffers()))
	}
	for i, p := range r.u.Params() {
		q := s.Params()[i]
		if q.Name != p.Name || !slices.Equal(q.Shape, p.Shape) || !slices.Equal(q.Data, p.Data) {
			t.Fatalf("param %d: read %s %v, saved %s %v", i, q.Name, q.Shape, p.Name, p.Shape)
		}
	}
	for i, b := range r.u.Buffers() {
		if q := s.Buffers()[i]; q.Name != b.Name || !slices.Equal(q.Data, b.Data) {
			t.Fatalf("buffer %d: read %s, saved %s", i, q.Name, b.Name)
		}
	}
	// Corrupt one payload byte: the SHA-256 no longer holds.
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)-1] ^= 1
	bad := filepath.Join(dir, "bad.ckpt")
	if err := os.WriteFile(bad, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Read(bad); !errors.Is(err, ErrFormat) {
		t.Errorf("damaged payload: %v, want ErrFormat", err)
	}
	if _, _, err := Read(path + ".absent"); err == nil {
		t.Error("a missing file read")
	}
}

// TestExtra: bytes saved beside the tensors come back from Read, leave Load's tensors as
// they are, count in the payload's SHA-256, and a manifest whose extra bytes do not add up
// is refused.
func TestExtra(t *testing.T) {
	arch := tinyArch(engine.Instance)
	r := newRun(t, arch, 4)
	dir := t.TempDir()
	path := filepath.Join(dir, "model.ckpt")
	extra := []byte("AMIDRF1\n the trees of a forest")
	if err := Save(path, Checkpoint{Arch: arch, Model: r.u, Extra: extra}); err != nil {
		t.Fatal(err)
	}
	m, s, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if m.ExtraBytes != int64(len(extra)) || !bytes.Equal(s.Extra, extra) {
		t.Fatalf("read %d extra bytes %q, saved %q", m.ExtraBytes, s.Extra, extra)
	}
	other := newRun(t, arch, 5)
	if _, err := Load(path, arch, other.u, nil); err != nil {
		t.Fatal(err)
	}
	for i, p := range r.u.Params() {
		if !slices.Equal(other.u.Params()[i].Data, p.Data) {
			t.Fatalf("param %s differs after Load of a checkpoint with extra bytes", p.Name)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)-1] ^= 1 // the extra bytes' last
	bad := filepath.Join(dir, "bad.ckpt")
	if err := os.WriteFile(bad, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Read(bad); !errors.Is(err, ErrFormat) {
		t.Errorf("damaged extra bytes: %v, want ErrFormat", err)
	}
	m.ExtraBytes++
	if err := m.check(); !errors.Is(err, ErrFormat) {
		t.Errorf("extra bytes that do not add up: %v, want ErrFormat", err)
	}
}
