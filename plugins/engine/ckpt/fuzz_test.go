package ckpt

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"amid/plugins/engine"
)

var update = flag.Bool("update", false, "rewrite testdata/seed.ckpt")

// seedArch is the architecture of testdata/seed.ckpt: two stages of 2 and 4 filters, so
// the file stays a few kilobytes.
func seedArch() engine.UNetConfig {
	return engine.UNetConfig{In: 1, Classes: 2, Widths: []int{2, 4}, Convs: 1, Slope: 0.01}
}

const seedPath = "testdata/seed.ckpt"

// TestSeedFile loads the committed checkpoint (two AdamW steps on the fixed batch of
// newRun), so a change of the file layout shows, and saves what it loaded again: the
// payload must come out bit for bit. Then it trains the two steps again and the payload
// must come out bit for bit once more: newRun trains on the portable CPU backend
// (engine.NewPortableCPU), whose sums do not depend on the OpenBLAS kernels the CPU would
// pick (they round differently on AVX2 and AVX-512), so the committed file is reproduced
// on every CPU the tests support. -update rewrites it.
func TestSeedFile(t *testing.T) {
	arch := seedArch()
	if *update {
		r := newRun(t, arch, 3)
		r.train(2)
		if err := Save(seedPath, Checkpoint{Arch: arch, Train: trainCfg{1e-2, 2}, Epoch: 0, Step: 2, Model: r.u, Opt: r.opt}); err != nil {
			t.Fatal(err)
		}
	}
	r := newRun(t, arch, 4)
	m, err := Load(seedPath, arch, r.u, r.opt)
	if err != nil {
		t.Fatal(err)
	}
	// Two steps were taken before saving (see -update above).
	if m.Step != 2 || r.opt.State().Step != 2 {
		t.Fatalf("seed checkpoint at step %d, optimizer step %d; want 2", m.Step, r.opt.State().Step)
	}
	p := filepath.Join(t.TempDir(), "again.ckpt")
	if err := Save(p, Checkpoint{Arch: arch, Train: trainCfg{1e-2, 2}, Step: 2, Model: r.u, Opt: r.opt}); err != nil {
		t.Fatal(err)
	}
	m2, err := ReadManifest(p)
	if err != nil {
		t.Fatal(err)
	}
	if m2.SHA256 != m.SHA256 {
		t.Fatalf("payload sha256 %s saved again, %s committed", m2.SHA256, m.SHA256)
	}
	// Training the same two steps again reproduces the payload bit for bit: newRun's
	// portable backend sums the same way on every x86-64 CPU, whatever OpenBLAS kernels
	// the machine would pick.
	again := newRun(t, arch, 3)
	again.train(2)
	p = filepath.Join(t.TempDir(), "retrained.ckpt")
	if err := Save(p, Checkpoint{Arch: arch, Train: trainCfg{1e-2, 2}, Step: 2, Model: again.u, Opt: again.opt}); err != nil {
		t.Fatal(err)
	}
	if m3, err := ReadManifest(p); err != nil || m3.SHA256 != m.SHA256 {
		t.Fatalf("retrained payload sha256 %v (%v), %s committed", m3, err, m.SHA256)
	}
}

// FuzzLoad feeds arbitrary bytes to the checkpoint reader: it must return ErrFormat or
// ErrMismatch (or load), never panic or allocate from unchecked sizes.
func FuzzLoad(f *testing.F) {
	if b, err := os.ReadFile(seedPath); err == nil {
		f.Add(b)
	}
	arch := seedArch()
	r := newRun(f, arch, 5)
	var buf bytes.Buffer
	p := filepath.Join(f.TempDir(), "w.ckpt")
	if err := Save(p, Checkpoint{Arch: arch, Model: r.u}); err != nil {
		f.Fatal(err)
	}
	if b, err := os.ReadFile(p); err == nil {
		f.Add(b)
		buf.Write(b[:headerLen+20])
		f.Add(buf.Bytes())
	}
	f.Add([]byte(magic + "\x01\x00\x00\x00\x02\x00\x00\x00{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := decode(bytes.NewReader(data), int64(len(data)), arch, r.u, r.opt)
		if err != nil && !errors.Is(err, ErrFormat) && !errors.Is(err, ErrMismatch) {
			t.Fatalf("error of no known kind: %v", err)
		}
		if _, _, err := readHeader(bytes.NewReader(data)); err != nil && !errors.Is(err, ErrFormat) {
			t.Fatalf("header error of no known kind: %v", err)
		}
	})
}
