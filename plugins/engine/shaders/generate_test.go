package shaders

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"amid/assets/ci"
)

// TestGeneratedCurrent compiles every shader into a temporary folder and compares the
// SPIR-V with the committed files, which must be exactly the shaders' (none missing,
// none left over).
func TestGeneratedCurrent(t *testing.T) {
	if _, err := exec.LookPath("glslc"); err != nil {
		ci.Missing(t, "glslc is not installed (Debian: glslc)")
	}
	out := t.TempDir()
	if b, err := exec.Command("./generate.sh", out).CombinedOutput(); err != nil {
		t.Fatalf("generate.sh: %v\n%s", err, b)
	}
	srcs, err := filepath.Glob("*.comp")
	if err != nil || len(srcs) == 0 {
		t.Fatalf("no shaders: %v", err)
	}
	for _, src := range srcs {
		name := strings.TrimSuffix(src, ".comp") + ".spv"
		got, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		have, err := os.ReadFile(filepath.Join("spv", name))
		if err != nil {
			t.Errorf("spv/%s is missing: run go generate ./plugins/engine/shaders", name)
			continue
		}
		if !bytes.Equal(got, have) {
			t.Errorf("spv/%s is stale: run go generate ./plugins/engine/shaders", name)
		}
	}
	committed, _ := filepath.Glob("spv/*.spv")
	if len(committed) != len(srcs) {
		t.Errorf("%d SPIR-V files for %d shaders: remove the ones without a shader", len(committed), len(srcs))
	}
}

// Every shader is valid SPIR-V for Vulkan 1.1 (spirv-val, Debian spirv-tools).
func TestValid(t *testing.T) {
	if _, err := exec.LookPath("spirv-val"); err != nil {
		ci.Missing(t, "spirv-val is not installed (Debian: spirv-tools)")
	}
	files, _ := filepath.Glob("spv/*.spv")
	for _, f := range files {
		if b, err := exec.Command("spirv-val", "--target-env", "vulkan1.1", f).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", f, err, b)
		}
	}
}

func TestSPIRV(t *testing.T) {
	b, err := SPIRV("gemm")
	if err != nil || len(b) < 20 || b[0] != 0x03 || b[1] != 0x02 || b[2] != 0x23 || b[3] != 0x07 {
		t.Fatalf("gemm: %d bytes, %v", len(b), err)
	}
	if _, err := SPIRV("nonexistent"); err == nil {
		t.Fatal("a missing shader was found")
	}
}
