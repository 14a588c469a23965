package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"amid/assets/ci"
	"amid/host/synth"
	"amid/viewer/imageio"
)

// samplePath is the bundled sample study, relative to this package.
var samplePath = filepath.Join("..", "..", "assets", "sample", "head_ct_labels.nii.gz")

func run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = Main(args, &o, &e)
	return o.String(), e.String(), code
}

func TestInspectJSON(t *testing.T) {
	out, errOut, code := run(t, "inspect", samplePath, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var info Info
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	// synth.SampleStudy: 96×96×40 voxels of 2.4×2.4×4 mm, uint8 labels 0–5.
	if info.Format != imageio.NIfTI || info.Dims != [4]int{96, 96, 40, 1} || info.DType != "uint8" {
		t.Fatalf("info %+v", info)
	}
	if len(info.Labels) != len(synth.HeadCTLabels) {
		t.Fatalf("labels %v, want the %d of synth.HeadCTLabels", info.Labels, len(synth.HeadCTLabels))
	}
	var total int64
	for _, n := range info.Labels {
		total += n
	}
	if total != 96*96*40 {
		t.Fatalf("label counts sum to %d, want every voxel", total)
	}
	for _, k := range []string{"format", "dims", "spacing", "origin", "direction", "dtype", "min", "max", "mean", "labels"} {
		if !strings.Contains(out, `"`+k+`"`) {
			t.Errorf("JSON lacks %q", k)
		}
	}
}

func TestConvertKeepsValuesAndGeometry(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join("..", "..", "assets", "sample", "head_ct.nii.gz")
	orig, err := imageio.Read(src)
	if err != nil {
		t.Fatal(err)
	}
	prev := src
	for _, ext := range []string{".mha", ".nrrd", ".nii"} {
		next := filepath.Join(dir, "ct"+ext)
		if _, e, code := run(t, "convert", prev, next); code != 0 {
			t.Fatalf("convert %s → %s: %s", prev, next, e)
		}
		prev = next
	}
	got, err := imageio.Read(prev)
	if err != nil {
		t.Fatal(err)
	}
	if got.Dims != orig.Dims || got.DType() != orig.DType() {
		t.Fatalf("after nii.gz→mha→nrrd→nii: %v %v, want %v %v", got.Dims, got.DType(), orig.Dims, orig.DType())
	}
	if got.Spacing != orig.Spacing || got.Origin != orig.Origin || got.Direction != orig.Direction {
		t.Fatalf("geometry changed: %v %v %v, want %v %v %v", got.Spacing, got.Origin, got.Direction, orig.Spacing, orig.Origin, orig.Direction)
	}
	for i := 0; i < got.Len(); i++ {
		if got.AtIndex(i) != orig.AtIndex(i) {
			t.Fatalf("voxel %d: %v, want %v", i, got.AtIndex(i), orig.AtIndex(i))
		}
	}
}

func TestErrorsAreOneLineWithTheFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "broken.nii.gz")
	if err := os.WriteFile(bad, []byte{0x1f, 0x8b, 8, 0, 0, 0}, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"inspect", filepath.Join(dir, "missing.nii")},
		{"inspect", bad},
		{"convert", samplePath, filepath.Join(dir, "out.xyz")},
	} {
		_, e, code := run(t, args...)
		if code == 0 {
			t.Errorf("%v: exit 0", args)
			continue
		}
		if !strings.HasPrefix(e, "amid: ") || strings.Count(e, "\n") != 1 {
			t.Errorf("%v: stderr %q is not one line starting with \"amid: \"", args, e)
		}
		if p := args[len(args)-1]; !strings.Contains(e, filepath.Base(p)) && !strings.Contains(e, filepath.Base(args[1])) {
			t.Errorf("%v: stderr %q does not name the file", args, e)
		}
	}
}

// The headless program must build without cgo and import no Fyne package (ARCHITECTURE.md).
func TestHeadlessImportsNoFyne(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		ci.Missing(t, "the go command is not on the PATH")
	}
	cmd := exec.Command("go", "list", "-deps", "amid/app/cmd/amid")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "fyne.io/") {
			t.Fatalf("bin/amid depends on %s", p)
		}
	}
}

// TestOneVersion: the program's version is the one the packages record (host/run's
// Version, set at link time); before, the CLI had a Version of its own that nothing
// passed on, so a versioned build recorded "dev" in its packages. A real amid is linked
// with the version set as a release build sets it, and asked.
func TestOneVersion(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		ci.Missing(t, "the go command is not on the PATH")
	}
	exe := filepath.Join(t.TempDir(), "amid")
	cmd := exec.Command("go", "build", "-ldflags=-X amid/host/run.Version=1.2.3-test", "-o", exe, "../cmd/amid")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	out, err := exec.Command(exe, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "1.2.3-test") {
		t.Errorf("amid --version: %v, %q; want the run's version 1.2.3-test", err, out)
	}
}
