package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"amid/assets/fileio"
	"amid/host/audit"
	"amid/host/export"
	"amid/plugins/compute"
)

// testPackage is a model package written by export.Write from small files, and the bbolt
// audit log it came from.
type testPackage struct {
	dir, pkg, db string
	lastHash     string
}

func putFile(t *testing.T, dir, rel, data string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func newTestPackage(t *testing.T) *testPackage {
	t.Helper()
	dir := t.TempDir()
	p := &testPackage{dir: dir, pkg: filepath.Join(dir, "pkg"), db: filepath.Join(dir, "run", "audit.db")}
	bin := putFile(t, dir, "src/amid-plugin-seg", "#!/bin/sh\nexit 0\n", 0o755)
	ckpt := putFile(t, dir, "src/model.ckpt", "weights", 0o644)
	putFile(t, dir, "src/pred/case_001.nii.gz", "prediction one", 0o644)
	putFile(t, dir, "src/pred/case_002.nii.gz", "prediction two", 0o644)
	putFile(t, dir, "src/sub/submission.csv", "id\ncase_001\n", 0o644)
	log, err := audit.Open(p.db)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	sum, _ := fileio.SHA256(ckpt)
	for _, e := range []audit.Entry{
		{Role: audit.RoleHost, Action: audit.ActionTaskLoaded},
		{Role: audit.RoleHost, Action: audit.ActionFoldsLocked},
		{Role: audit.PluginRole("segmentation"), Action: audit.ActionLaneTrained, Outputs: map[string]string{"checkpoint": sum}, Details: json.RawMessage(`{"lane":"unet","fold":0}`)},
		{Role: audit.RoleUser, Action: audit.ActionReviewDecision, Details: json.RawMessage(`{"case":"case_001","decision":"approved"}`)},
	} {
		if _, err := log.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	m, err := export.Write(p.pkg, export.Contents{
		TaskID: "demo", AMIDVersion: "test", Created: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
		Plugin: export.Plugin{Name: "segmentation", Version: "1", Binary: bin}, Lane: "unet",
		Task: []byte("id: demo\n"), Checkpoints: []string{ckpt},
		Predictions: filepath.Join(dir, "src/pred"), Submission: filepath.Join(dir, "src/sub"),
		Compute: cliIdentity,
		Audit:   log,
	})
	if err != nil {
		t.Fatal(err)
	}
	p.lastHash = m.Audit.LastHash
	return p
}

// verifyWith runs amid verify with args, re-running packages with reproduce.
func verifyWith(t *testing.T, reproduce reproducer, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = mainWith(append([]string{"verify"}, args...), &o, &e, reproduce)
	return o.String(), e.String(), code
}

// rerun copies the package's predictions into out/predictions, then applies change.
func rerun(change map[string]string) reproducer {
	return func(_ context.Context, pkg, out string) (compute.Identity, error) {
		for _, n := range []string{"case_001.nii.gz", "case_002.nii.gz"} {
			b, err := os.ReadFile(filepath.Join(pkg, "predictions", n))
			if err != nil {
				return compute.Identity{}, err
			}
			os.MkdirAll(filepath.Join(out, "predictions"), 0o755)
			if err := os.WriteFile(filepath.Join(out, "predictions", n), b, 0o644); err != nil {
				return compute.Identity{}, err
			}
		}
		for n, data := range change {
			os.WriteFile(filepath.Join(out, "predictions", n), []byte(data), 0o644)
		}
		return cliIdentity, nil
	}
}

// cliIdentity is what the fixture package records and its re-runs report.
var cliIdentity = compute.Identity{Engine: "0.2.0", Device: "cpu", BLAS: "openblas 0.3.21", Core: "Haswell", Workers: 2}

func TestVerifyPassesAndSaysWhatItSkipped(t *testing.T) {
	p := newTestPackage(t)
	out, errOut, code := verifyWith(t, nil, p.pkg)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	// 14 files besides manifest.json: the 9 every package holds (export's required list),
	// the plugin, one weight file, 2 predictions and the submission.
	for _, s := range []string{"verified: 14 files match the manifest", "audit log intact: 5 entries, last hash " + p.lastHash,
		"reproducibility not checked: no way to re-run a package was given"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}

	zip := filepath.Join(p.dir, "pkg.zip")
	if err := export.Zip(p.pkg, zip); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{p.pkg, zip} {
		out, errOut, code = verifyWith(t, rerun(nil), target)
		want := "predictions reproduced byte for byte under the same compute identity (2 files)\n" +
			"  package computed with: engine 0.2.0, cpu, openblas 0.3.21 Haswell, 2 workers\n" +
			"  re-run computed with:  engine 0.2.0, cpu, openblas 0.3.21 Haswell, 2 workers\n"
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("%s: exit %d: %s%s", target, code, out, errOut)
		}
	}
	out, _, code = verifyWith(t, rerun(nil), p.pkg, "--no-reproduce")
	if code != 0 || !strings.Contains(out, "reproducibility not checked (--no-reproduce)") {
		t.Fatalf("--no-reproduce: exit %d: %s", code, out)
	}
}

func TestVerifyReportsDifferentReproduction(t *testing.T) {
	p := newTestPackage(t)
	out, errOut, code := verifyWith(t, rerun(map[string]string{"case_002.nii.gz": "another prediction"}), p.pkg)
	if code == 0 {
		t.Fatalf("exit 0:\n%s", out)
	}
	if !strings.Contains(out, "predictions/case_002.nii.gz: the re-run wrote different bytes") || strings.Contains(out, "case_001") {
		t.Fatalf("output does not list exactly the differing file:\n%s", out)
	}
	if !strings.HasPrefix(errOut, "amid: ") || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "case_002.nii.gz") {
		t.Fatalf("stderr %q", errOut)
	}
}

// A tampered weight file or audit log fails amid verify with a line naming it.
func TestVerifyCatchesTampering(t *testing.T) {
	edit := func(t *testing.T, pkg string, fn func([]string) []string) {
		path := filepath.Join(pkg, "audit.jsonl")
		b, _ := os.ReadFile(path)
		lines := fn(strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"))
		os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	}
	for _, c := range []struct {
		name   string
		tamper func(t *testing.T, pkg string)
		want   string
	}{
		{"weight file", func(t *testing.T, pkg string) { putFile(t, pkg, "model/model.ckpt", "weightz", 0o644) }, "model/model.ckpt has sha256"},
		{"changed field", func(t *testing.T, pkg string) {
			edit(t, pkg, func(l []string) []string {
				l[3] = strings.Replace(l[3], `"approved"`, `"rejected"`, 1)
				return l
			})
		}, "entry seq 4 (line 4) was changed"},
		{"removed entry", func(t *testing.T, pkg string) {
			edit(t, pkg, func(l []string) []string { return append(l[:1:1], l[2:]...) })
		}, "entry seq 3 (line 2) comes where entry seq 2 should be"},
		{"swapped entries", func(t *testing.T, pkg string) {
			edit(t, pkg, func(l []string) []string { l[2], l[3] = l[3], l[2]; return l })
		}, "entry seq 4 (line 3) comes where entry seq 3 should be"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newTestPackage(t)
			c.tamper(t, p.pkg)
			out, errOut, code := verifyWith(t, nil, p.pkg)
			if code == 0 {
				t.Fatalf("exit 0:\n%s", out)
			}
			if !strings.Contains(out, c.want) {
				t.Errorf("output lacks %q:\n%s", c.want, out)
			}
			if !strings.HasPrefix(errOut, "amid: "+p.pkg+": package verification failed: ") || strings.Count(errOut, "\n") != 1 {
				t.Errorf("stderr %q", errOut)
			}
		})
	}
}
