package run

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"

	"amid/host/audit"
	"amid/host/export"
	"amid/host/supervisor"
	"amid/plugins/compute"
)

// verifyPackage verifies pkg with a real re-run (the package's own plugin, started by
// Reproduce) and returns the verification, failing t only on an unexpected error shape.
func verifyPackage(t *testing.T, pkg string) *export.Verification {
	t.Helper()
	v, err := export.Verify(context.Background(), pkg, export.VerifyOptions{Reproduce: func(ctx context.Context, pkg, out string) (compute.Identity, error) {
		return Reproduce(ctx, pkg, out, "", supervisor.Options{})
	}})
	if (err == nil) != v.OK() {
		t.Fatalf("verify: error %v with problems %q", err, v.Problems)
	}
	return v
}

// otherCore is an OpenBLAS core type this CPU can run whose kernels differ from core's:
// Haswell under SkylakeX (AVX-512 machines), Sandybridge under Haswell (AVX2 machines).
func otherCore(t *testing.T, core string) string {
	t.Helper()
	for _, c := range []string{"Haswell", "Sandybridge"} {
		if !strings.EqualFold(c, core) && (c != "Haswell" || cpu.X86.HasAVX2 && cpu.X86.HasFMA) {
			return c
		}
	}
	t.Fatalf("no second core type for %q on this CPU", core)
	return ""
}

// checkIdentities checks the compute identity of the run's package and verifies copies of
// it across core types: made under one, verified under another forced, it reproduces
// (byte for byte or within tolerance) and says so with both identities; a forged copy
// whose weights were perturbed, with every hash recomputed, fails on the reproduction
// itself under either identity.
func checkIdentities(t *testing.T, st *State) {
	t.Helper()
	var man export.Manifest
	readJSONT(t, filepath.Join(st.Package, "manifest.json"), &man)
	id := man.Compute
	if id.IsZero() || id != st.Compute || id.Device != "cpu" || id.Engine == "" || id.Workers < 1 {
		t.Fatalf("the package records compute %+v, the run %+v", id, st.Compute)
	}
	if len(man.Trained) != 1 || man.Trained[0] != id {
		t.Errorf("trained with %+v; want the identity of the predictions %+v (same machine, same process settings)", man.Trained, id)
	}
	if rep, err := os.ReadFile(filepath.Join(st.Package, "report.md")); err != nil || !strings.Contains(string(rep), "The predictions were computed with "+id.String()) {
		t.Errorf("report.md does not name the compute identity %s: %v", id, err)
	}

	v := verifyPackage(t, st.Package)
	if !v.Reproduced || !v.Exact || v.Rerun != id {
		t.Fatalf("same machine: %q (re-run %v), problems %q", v.ReproduceNote, v.Rerun, v.Problems)
	}

	other := otherCore(t, id.Core)
	t.Setenv("OPENBLAS_CORETYPE", other)
	v = verifyPackage(t, st.Package)
	if !v.OK() || !v.Reproduced || !strings.EqualFold(v.Rerun.Core, other) || !strings.Contains(v.ReproduceNote, "on different hardware ("+id.Core+" vs "+v.Rerun.Core+")") {
		t.Fatalf("verified with %s forced: %q (re-run %v), problems %q", other, v.ReproduceNote, v.Rerun, v.Problems)
	}
	t.Logf("made with %s, verified with %s forced: %s", id.Core, other, v.ReproduceNote)

	forged := filepath.Join(t.TempDir(), "forged")
	if err := exec.Command("cp", "-a", st.Package, forged).Run(); err != nil {
		t.Fatal(err)
	}
	forgeWeights(t, forged)
	v = verifyPackage(t, forged)
	if v.Reproduced || len(v.Problems) == 0 || !strings.Contains(v.Problems[0], "is beyond tolerance") {
		t.Fatalf("a forged package verified with %s forced: %q, problems %q", other, v.ReproduceNote, v.Problems)
	}
	for _, p := range v.Problems {
		if strings.Contains(p, "sha256") || strings.Contains(p, "audit") {
			t.Errorf("the forged package failed a checksum, not the reproduction: %s", p)
		}
	}
	t.Setenv("OPENBLAS_CORETYPE", id.Core)
	v = verifyPackage(t, forged)
	if v.Reproduced || len(v.Problems) == 0 || !strings.Contains(v.Problems[0], "the re-run wrote different bytes under the same compute identity") {
		t.Fatalf("a forged package verified under its own identity: %q, problems %q", v.ReproduceNote, v.Problems)
	}
}

func readJSONT(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// forgeWeights perturbs every parameter of the package's checkpoints by 30 % of its own
// size (alternating sign), as a forger who retrained or edited the model would, then
// recomputes every hash that could tell: the checkpoint's own payload sha256, the audit
// entries that record it (the chain rehashed from the first changed entry), and the
// manifest's file sizes and sha256s and its audit anchor. Only the reproduction of the
// predictions can then catch it.
func forgeWeights(t *testing.T, pkg string) {
	t.Helper()
	var man export.Manifest
	readJSONT(t, filepath.Join(pkg, "manifest.json"), &man)
	swap := map[string]string{} // old sha256 → new
	for _, f := range man.Files {
		if !strings.HasPrefix(f.Path, "model/") || strings.HasSuffix(f.Path, ".json") {
			continue
		}
		p := filepath.Join(pkg, filepath.FromSlash(f.Path))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		nb := perturbCheckpoint(t, b)
		if err := os.WriteFile(p, nb, 0o644); err != nil {
			t.Fatal(err)
		}
		swap[f.SHA256] = sha256Hex(nb)
	}
	if len(swap) == 0 {
		t.Fatal("the package has no weights to forge")
	}
	af, err := os.Open(filepath.Join(pkg, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := audit.ReadJSONL(af)
	af.Close()
	if err != nil {
		t.Fatal(err)
	}
	prev := ""
	for i := range entries {
		e := &entries[i]
		for k, s := range e.Outputs {
			if n, ok := swap[s]; ok {
				e.Outputs[k] = n
			}
		}
		e.Prev = prev
		if e.Hash, err = audit.HashOf(*e); err != nil {
			t.Fatal(err)
		}
		prev = e.Hash
	}
	var buf bytes.Buffer
	if err := audit.WriteJSONL(&buf, entries); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "audit.jsonl"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, f := range man.Files {
		b, err := os.ReadFile(filepath.Join(pkg, filepath.FromSlash(f.Path)))
		if err != nil {
			t.Fatal(err)
		}
		man.Files[i].Size, man.Files[i].SHA256 = int64(len(b)), sha256Hex(b)
	}
	man.Audit.Entries, man.Audit.LastHash = len(entries), prev
	mb, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "manifest.json"), mb, 0o644); err != nil {
		t.Fatal(err)
	}
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// perturbCheckpoint rewrites an engine checkpoint (amid/plugins/engine/ckpt: magic, format
// and manifest length as uint32, the JSON manifest, the float32 payload) with every
// parameter v replaced by v·(1 ± 0.3) and the manifest's payload sha256 recomputed.
func perturbCheckpoint(t *testing.T, b []byte) []byte {
	t.Helper()
	const magic = "AMIDCKPT"
	if len(b) < len(magic)+8 || string(b[:len(magic)]) != magic {
		t.Fatal("not an engine checkpoint")
	}
	mlen := int(binary.LittleEndian.Uint32(b[len(magic)+4:]))
	head := len(magic) + 8
	var m map[string]any
	if err := json.Unmarshal(b[head:head+mlen], &m); err != nil {
		t.Fatal(err)
	}
	payload := append([]byte(nil), b[head+mlen:]...)
	off := 0
	tensors, _ := m["tensors"].([]any)
	if len(tensors) == 0 {
		t.Fatalf("checkpoint manifest without tensors: %v", m)
	}
	for _, x := range tensors {
		tm := x.(map[string]any)
		n := 1
		for _, d := range tm["shape"].([]any) {
			n *= int(d.(float64))
		}
		if tm["kind"] == "param" {
			for i := range n {
				p := payload[off+4*i:]
				v := math.Float32frombits(binary.LittleEndian.Uint32(p))
				f := float32(1.3)
				if i%2 == 1 {
					f = 0.7
				}
				binary.LittleEndian.PutUint32(p, math.Float32bits(v*f))
			}
		}
		off += 4 * n
	}
	m["sha256"] = sha256Hex(payload)
	mb, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	out := append([]byte(nil), b[:len(magic)+4]...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(mb)))
	return append(append(out, mb...), payload...)
}
