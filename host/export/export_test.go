package export

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"amid/assets/ci"
	"amid/assets/fileio"
	"amid/host/audit"
	"amid/plugins/compute"
)

// fixture is a package's sources: a plugin binary, a checkpoint, predictions and a
// submission, and an audit log that recorded the training of lane "unet-a".
type fixture struct {
	dir  string
	log  *audit.Log
	c    Contents
	ckpt string
}

func put(t *testing.T, dir, rel, data string, mode os.FileMode) string {
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

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{dir: dir}
	bin := put(t, dir, "src/amid-plugin-seg", "#!/bin/sh\necho segmentation plugin\n", 0o755)
	f.ckpt = put(t, dir, "src/fold0.ckpt", "weights of fold 0\x00\x01\x02", 0o644)
	put(t, dir, "src/pred/case_001.nii.gz", "prediction one", 0o644)
	put(t, dir, "src/pred/sub/case_002.nii.gz", "prediction two", 0o644)
	put(t, dir, "src/sub/submission.csv", "id,path\ncase_001,case_001.nii.gz\n", 0o644)
	log, err := audit.Open(filepath.Join(dir, "run", "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	f.log = log
	ck, _ := fileio.SHA256(f.ckpt)
	for _, e := range []audit.Entry{
		{Role: audit.RoleHost, Action: audit.ActionTaskLoaded},
		{Role: audit.RoleHost, Action: audit.ActionFoldsLocked},
		{Role: audit.PluginRole("segmentation"), Action: audit.ActionLaneTrained, Outputs: map[string]string{"fold0.ckpt": ck}, Details: json.RawMessage(`{"lane":"unet-a"}`)},
	} {
		if _, err := log.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	f.c = Contents{
		TaskID:        "demo-seg",
		AMIDVersion:   "test",
		Created:       time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC),
		Plugin:        Plugin{Name: "segmentation", Version: "1.2.0", Binary: bin},
		EngineVersion: "engine-0.3",
		Lane:          "unet-a",
		Task:          []byte("id: demo-seg\nkind: segmentation\n"),
		Fingerprint:   map[string]any{"cases": 2},
		Plan:          []map[string]string{{"name": "unet-a"}, {"name": "unet-b"}},
		Scores: Scores{Metric: "dice", HigherIsBetter: true, Lanes: []LaneScores{
			{Lane: "unet-a", Plugin: "segmentation", Status: "done", Folds: []FoldScore{{0, 0.8, 5}, {1, 0.9, 5}}},
			{Lane: "unet-b", Plugin: "segmentation", Status: "done", Folds: []FoldScore{{0, 0.7, 5}, {1, 0.6, 5}}},
			{Lane: "unet-c", Plugin: "segmentation", Status: "failed", Reason: "NaN loss | epoch 2"},
		}},
		Review:      []Decision{{Case: "case_001", Decision: "approved", Reviewer: "dr", Time: time.Date(2025, 3, 4, 6, 0, 0, 0, time.UTC)}},
		ModelConfig: map[string]any{"depth": 4},
		Checkpoints: []string{f.ckpt},
		Predictions: filepath.Join(dir, "src/pred"),
		Submission:  filepath.Join(dir, "src/sub"),
		Report: Report{
			Title: "Demo segmentation", Challenge: "Segment the demo organ.", Evaluation: "Mean Dice.",
			Method: "U-Net lanes.", Chosen: "unet-a",
			Candidates: []Candidate{
				{Lane: "unet-a", Plugin: "segmentation", Summary: "4 levels", Why: "Best mean Dice."},
				{Lane: "unet-b", Plugin: "segmentation", Summary: "3 levels", Why: "Lower Dice on both folds."},
			},
		},
		Compute: testIdentity,
		Trained: []compute.Identity{testIdentity},
		Audit:   log,
	}
	return f
}

// testIdentity is the compute identity the fixture's package records and copyPredictions
// reports, so that its re-runs are judged byte for byte.
var testIdentity = compute.Identity{Engine: "0.2.0", Device: "cpu", BLAS: "openblas 0.3.21", Core: "Haswell", Workers: 2}

func (f *fixture) write(t *testing.T) string {
	t.Helper()
	pkg := filepath.Join(f.dir, "out", "pkg")
	if _, err := Write(pkg, f.c); err != nil {
		t.Fatal(err)
	}
	return pkg
}

func verify(t *testing.T, p string, opt VerifyOptions) *Verification {
	t.Helper()
	v, err := Verify(context.Background(), p, opt)
	if (err == nil) != v.OK() || err != nil && !errors.Is(err, ErrFailed) {
		t.Fatalf("error %v with problems %q", err, v.Problems)
	}
	return v
}

func TestWriteLaysOutTheFolder(t *testing.T) {
	f := newFixture(t)
	pkg := f.write(t)
	var m Manifest
	b, err := os.ReadFile(filepath.Join(pkg, FileManifest))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, file := range m.Files {
		paths = append(paths, file.Path)
		got, _ := fileio.SHA256(filepath.Join(pkg, filepath.FromSlash(file.Path)))
		if got != file.SHA256 {
			t.Errorf("%s: sha256 %s, manifest %s", file.Path, got, file.SHA256)
		}
	}
	want := []string{"audit.jsonl", "fingerprint.json", "model/config.json", "model/fold0.ckpt", "plan.json",
		"plugin/amid-plugin-seg", "predictions/case_001.nii.gz", "predictions/sub/case_002.nii.gz",
		"report.md", "reproduce.sh", "review.json", "scores.json", "submission/submission.csv", "task.yaml"}
	if strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Fatalf("files %v\nwant  %v", paths, want)
	}
	binSum, _ := fileio.SHA256(f.c.Plugin.Binary)
	if m.Format != Format || m.TaskID != "demo-seg" || m.Plugin.SHA256 != binSum || m.Plugin.Binary != "plugin/amid-plugin-seg" || m.EngineVersion != "engine-0.3" {
		t.Fatalf("manifest %+v", m)
	}
	last, _, _ := f.log.Last()
	if m.Audit.LastHash != last.Hash || m.Audit.Entries != 4 || last.Action != audit.ActionExport {
		t.Fatalf("audit record %+v, log's last entry %+v", m.Audit, last)
	}
	for _, p := range []string{"plugin/amid-plugin-seg", "reproduce.sh"} {
		if st, _ := os.Stat(filepath.Join(pkg, p)); st.Mode()&0o111 == 0 {
			t.Errorf("%s is not executable", p)
		}
	}
	if v := verify(t, pkg, VerifyOptions{}); !v.OK() || v.Files != len(want) || v.AuditEntries != 4 || !strings.Contains(v.ReproduceNote, "not checked") {
		t.Fatalf("verify: %+v", v)
	}
	// Nothing of the partial build stays beside the package.
	if ents, _ := os.ReadDir(filepath.Dir(pkg)); len(ents) != 1 {
		t.Fatalf("%d entries beside the package", len(ents))
	}
	if _, err := Write(pkg, f.c); err == nil {
		t.Fatal("wrote over an existing package")
	}
}

func TestReportSections(t *testing.T) {
	f := newFixture(t)
	pkg := f.write(t)
	b, _ := os.ReadFile(filepath.Join(pkg, FileReport))
	r := string(b)
	for _, s := range []string{
		"# Solution report: Demo segmentation",
		"## Challenge and evaluation\n\nSegment the demo organ.\n\nMean Dice.",
		"## Method\n\nU-Net lanes.", "## Architecture\n\nNot recorded.", "## Training", "## Inference",
		"## Post-processing", "## Internal validation", "## Result", "## Why this candidate",
		"| lane | plugin | status | fold 0 | fold 1 | mean |",
		// unet-a: folds 0.8 and 0.9 from the fixture, mean 0.85.
		"| **`unet-a`** (chosen) | segmentation | done | 0.8000 | 0.9000 | 0.8500 |",
		"| `unet-c` | segmentation | failed: NaN loss \\| epoch 2 | – | – | – |",
		"Chosen: `unet-a` (segmentation), 4 levels.\n\nBest mean Dice.",
		"- `unet-b` (segmentation), 3 levels: Lower Dice on both folds.",
		"amid reproduce PACKAGE_DIR OUT_DIR",
	} {
		if !strings.Contains(r, s) {
			t.Errorf("report lacks %q", s)
		}
	}
	if t.Failed() {
		t.Log(r)
	}
}

func TestZipIsDeterministicAndVerifies(t *testing.T) {
	f := newFixture(t)
	pkg := f.write(t)
	z1, z2 := filepath.Join(f.dir, "a.zip"), filepath.Join(f.dir, "b.zip")
	if err := Zip(pkg, z1); err != nil {
		t.Fatal(err)
	}
	// Touch every file: a new mtime must not change the zip.
	later := time.Now().Add(time.Hour)
	filepath.WalkDir(pkg, func(p string, _ os.DirEntry, _ error) error { return os.Chtimes(p, later, later) })
	if err := Zip(pkg, z2); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(z1)
	b, _ := os.ReadFile(z2)
	if !bytes.Equal(a, b) {
		t.Fatal("zipping twice gave different bytes")
	}
	v := verify(t, z1, VerifyOptions{Reproduce: copyPredictions(nil)})
	if !v.OK() || !v.Reproduced || v.Compared != 2 {
		t.Fatalf("zip: %+v", v)
	}
}

// copyPredictions is a reproduce hook that copies the package's predictions into
// out/predictions, changed by change (path under predictions/ → new content, "" removes)
// when not nil, and writes a log file beside them that Verify ignores.
func copyPredictions(change map[string]string) func(ctx context.Context, pkg, out string) (compute.Identity, error) {
	return func(ctx context.Context, pkg, out string) (compute.Identity, error) {
		if ents, _ := os.ReadDir(out); len(ents) != 0 {
			return testIdentity, errors.New("out is not empty")
		}
		if _, err := os.Stat(filepath.Join(pkg, FileManifest)); err != nil {
			return testIdentity, err
		}
		src := filepath.Join(pkg, DirPredictions)
		err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(src, p)
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			dst := filepath.Join(out, DirPredictions, rel)
			os.MkdirAll(filepath.Dir(dst), 0o755)
			return os.WriteFile(dst, b, 0o644)
		})
		os.WriteFile(filepath.Join(out, "reproduce.log"), []byte("log"), 0o644)
		for rel, data := range change {
			dst := filepath.Join(out, DirPredictions, filepath.FromSlash(rel))
			if data == "" {
				os.Remove(dst)
				continue
			}
			os.MkdirAll(filepath.Dir(dst), 0o755)
			os.WriteFile(dst, []byte(data), 0o644)
		}
		return testIdentity, err
	}
}

func TestReproduceDifferencesAreListed(t *testing.T) {
	f := newFixture(t)
	pkg := f.write(t)
	v := verify(t, pkg, VerifyOptions{Reproduce: copyPredictions(map[string]string{
		"sub/case_002.nii.gz": "a different prediction",
		"case_001.nii.gz":     "",
		"case_003.nii.gz":     "an extra file",
	})})
	want := []string{"predictions/case_001.nii.gz", "predictions/sub/case_002.nii.gz", "predictions/case_003.nii.gz"}
	if v.Reproduced || strings.Join(v.Differ, " ") != strings.Join(want, " ") || len(v.Problems) != 3 {
		t.Fatalf("differ %v problems %q", v.Differ, v.Problems)
	}
	for i, s := range []string{"was not written by the re-run", "the re-run wrote different bytes", "was written by the re-run but is not in the package"} {
		if !strings.Contains(v.Problems[i], want[i]) || !strings.Contains(v.Problems[i], s) {
			t.Errorf("problem %q, want %s and %q", v.Problems[i], want[i], s)
		}
	}
	v = verify(t, pkg, VerifyOptions{Reproduce: func(context.Context, string, string) (compute.Identity, error) {
		return compute.Identity{}, errors.New("plugin crashed:\nsignal 9")
	}})
	if v.OK() || !strings.Contains(v.Problems[0], "re-running prediction failed: plugin crashed: signal 9") {
		t.Fatalf("%q", v.Problems)
	}
}

func TestTamperingIsCaught(t *testing.T) {
	cases := []struct {
		name   string
		tamper func(t *testing.T, f *fixture, pkg string)
		want   []string // each must be in some problem
	}{
		{"weight changed", func(t *testing.T, _ *fixture, pkg string) {
			put(t, pkg, "model/fold0.ckpt", "weights of fold 0\x00\x01\x03", 0o644)
		}, []string{"model/fold0.ckpt has sha256", "the manifest records", "the audit log's export entry (seq 4) records"}},
		{"weight changed with a new manifest", func(t *testing.T, _ *fixture, pkg string) {
			put(t, pkg, "model/fold0.ckpt", "other weights", 0o644)
			rewriteManifest(t, pkg, nil)
		}, []string{"model/fold0.ckpt has sha256", "export entry (seq 4) records", "is not among the weights that the lane.trained entries for lane unet-a (seq 3) record"}},
		{"weight and audit forged", func(t *testing.T, _ *fixture, pkg string) {
			// Whoever rewrites the weights, the export entry, the chain and the manifest
			// consistently is still caught by the lane.trained entry.
			put(t, pkg, "model/fold0.ckpt", "other weights", 0o644)
			forgeExport(t, pkg)
			rewriteManifest(t, pkg, func(m *Manifest) { anchor(t, pkg, m) })
		}, []string{"model/fold0.ckpt: sha256", "is not among the weights that the lane.trained entries for lane unet-a (seq 3) record"}},
		{"file missing", func(t *testing.T, _ *fixture, pkg string) {
			os.Remove(filepath.Join(pkg, "predictions/sub/case_002.nii.gz"))
		}, []string{"predictions/sub/case_002.nii.gz is listed in the manifest but missing"}},
		{"file extra", func(t *testing.T, _ *fixture, pkg string) {
			put(t, pkg, "model/extra.bin", "x", 0o644)
		}, []string{"model/extra.bin is in the package but not listed in the manifest"}},
		{"audit entry removed", func(t *testing.T, _ *fixture, pkg string) {
			editAudit(t, pkg, func(l []string) []string { return append(l[:1:1], l[2:]...) })
		}, []string{"audit.jsonl", "entry seq 3 (line 2) comes where entry seq 2 should be"}},
		{"audit entries swapped", func(t *testing.T, _ *fixture, pkg string) {
			editAudit(t, pkg, func(l []string) []string { l[0], l[1] = l[1], l[0]; return l })
		}, []string{"entry seq 2 (line 1) comes where entry seq 1 should be"}},
		{"audit field changed", func(t *testing.T, _ *fixture, pkg string) {
			editAudit(t, pkg, func(l []string) []string {
				l[2] = strings.Replace(l[2], `"role":"plugin:segmentation"`, `"role":"user"`, 1)
				return l
			})
		}, []string{"entry seq 3 (line 3) was changed"}},
		{"audit cut at the end", func(t *testing.T, _ *fixture, pkg string) {
			editAudit(t, pkg, func(l []string) []string { return l[:3] })
			rewriteManifest(t, pkg, nil)
		}, []string{"audit.jsonl ends at entry seq 3", "the manifest records 4 entries"}},
		{"audit cut at the end, anchor moved", func(t *testing.T, _ *fixture, pkg string) {
			editAudit(t, pkg, func(l []string) []string { return l[:3] })
			rewriteManifest(t, pkg, func(m *Manifest) { anchor(t, pkg, m) })
		}, []string{"audit.jsonl: the last entry (seq 3) is lane.trained by plugin:segmentation, not the export entry"}},
		{"manifest newer", func(t *testing.T, _ *fixture, pkg string) {
			rewriteManifest(t, pkg, func(m *Manifest) { m.Format = Format + 1 })
		}, []string{"written by a newer AMID"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			pkg := f.write(t)
			c.tamper(t, f, pkg)
			v := verify(t, pkg, VerifyOptions{Reproduce: copyPredictions(nil)})
			if v.OK() {
				t.Fatal("not caught")
			}
			all := strings.Join(v.Problems, "\n")
			for _, w := range c.want {
				if !strings.Contains(all, w) {
					t.Errorf("problems lack %q:\n%s", w, all)
				}
			}
			for _, p := range v.Problems {
				if strings.Contains(p, "\n") {
					t.Errorf("problem %q is not one line", p)
				}
			}
			if v.Reproduced || !strings.Contains(v.ReproduceNote, "failed the checks") {
				t.Errorf("reproduce ran on a failing package: %+v", v)
			}
		})
	}
}

func editAudit(t *testing.T, pkg string, fn func([]string) []string) {
	t.Helper()
	p := filepath.Join(pkg, FileAudit)
	b, _ := os.ReadFile(p)
	lines := fn(strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"))
	os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// rewriteManifest recomputes every file's size and sha256, then applies edit.
func rewriteManifest(t *testing.T, pkg string, edit func(*Manifest)) {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(pkg, FileManifest))
	m, err := ParseManifest(b)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(pkg, FileManifest))
	files, err := listFiles(pkg)
	if err != nil {
		t.Fatal(err)
	}
	m.Files = files
	if edit != nil {
		edit(m)
	}
	b, _ = json.MarshalIndent(m, "", "  ")
	os.WriteFile(filepath.Join(pkg, FileManifest), b, 0o644)
}

// anchor points the manifest's audit record at audit.jsonl's last entry.
func anchor(t *testing.T, pkg string, m *Manifest) {
	t.Helper()
	f, _ := os.Open(filepath.Join(pkg, FileAudit))
	entries, err := audit.DecodeJSONL(f)
	f.Close()
	if err != nil || len(entries) == 0 {
		t.Fatal(err)
	}
	m.Audit.Entries, m.Audit.LastHash = len(entries), entries[len(entries)-1].Hash
}

// forgeExport rewrites the export entry to record the package's current files, with a
// correct hash: a forgery only an independent anchor can catch.
func forgeExport(t *testing.T, pkg string) {
	t.Helper()
	f, _ := os.Open(filepath.Join(pkg, FileAudit))
	entries, err := audit.DecodeJSONL(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	files, _ := listFiles(pkg)
	last := &entries[len(entries)-1]
	last.Outputs = map[string]string{}
	for _, file := range files {
		if file.Path != FileAudit && file.Path != FileManifest {
			last.Outputs[file.Path] = file.SHA256
		}
	}
	last.Hash, _ = audit.HashOf(*last)
	var b bytes.Buffer
	audit.WriteJSONL(&b, entries)
	os.WriteFile(filepath.Join(pkg, FileAudit), b.Bytes(), 0o644)
}

func TestWriteRefusesUntrainedWeights(t *testing.T) {
	f := newFixture(t)
	put(t, f.dir, "src/fold0.ckpt", "weights nobody trained", 0o644)
	_, err := Write(filepath.Join(f.dir, "pkg"), f.c)
	if err == nil || !strings.Contains(err.Error(), "model/fold0.ckpt: sha256") || !strings.Contains(err.Error(), "lane unet-a (seq 3) record") {
		t.Fatalf("error %v", err)
	}
	if last, _, _ := f.log.Last(); last.Action == audit.ActionExport {
		t.Fatal("export entry appended for a refused package")
	}
	f.c.Lane = "unet-z"
	if _, err := Write(filepath.Join(f.dir, "pkg"), f.c); err == nil || !strings.Contains(err.Error(), "no lane.trained entry for lane unet-z") {
		t.Fatalf("error %v", err)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "pkg")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a refused package left a folder")
	}
}

// Entries appended after the export entry stay out of the package.
func TestLaterAppendsStayOutOfThePackage(t *testing.T) {
	f := newFixture(t)
	pkg := f.write(t)
	if _, err := f.log.Append(audit.Entry{Role: audit.RoleUser, Action: "package.opened"}); err != nil {
		t.Fatal(err)
	}
	if v := verify(t, pkg, VerifyOptions{}); !v.OK() {
		t.Fatal(v.Problems)
	}
}

// reproduce.sh calls "$AMID reproduce PACKAGE OUT" with the package's absolute path.
func TestReproduceScript(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		ci.Missing(t, "no sh on the PATH")
	}
	f := newFixture(t)
	pkg := f.write(t)
	args := filepath.Join(f.dir, "args")
	fake := put(t, f.dir, "bin/amid", "#!/bin/sh\nprintf '%s\\n' \"$@\" > "+args+"\n", 0o755)
	cmd := exec.Command(sh, filepath.Join(pkg, FileReproduce), "outdir")
	cmd.Dir = f.dir
	cmd.Env = append(os.Environ(), "AMID="+fake)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	got, _ := os.ReadFile(args)
	abs, _ := filepath.EvalSymlinks(pkg)
	if string(got) != "reproduce\n"+abs+"\noutdir\n" {
		t.Fatalf("amid called with %q", got)
	}
	cmd = exec.Command(sh, filepath.Join(pkg, FileReproduce))
	cmd.Env = append(os.Environ(), "AMID="+fake)
	if err := cmd.Run(); err == nil {
		t.Fatal("no usage error without OUT_DIR")
	}
}

func TestVerifyUnreadable(t *testing.T) {
	dir := t.TempDir()
	for name, p := range map[string]string{
		"missing": filepath.Join(dir, "nothing"),
		"not zip": put(t, dir, "x.zip", "not a zip", 0o644),
		"empty":   dir,
	} {
		v, err := Verify(context.Background(), p, VerifyOptions{})
		if err == nil || v.OK() || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(`{"format":1,"amid_version":"x","task_id":"t","plugin":{"name":"p","version":"1","binary":"plugin/p","sha256":"` + strings.Repeat("a", 64) + `"},"audit":{"file":"audit.jsonl","entries":1,"last_hash":"` + strings.Repeat("b", 64) + `"},"files":[{"path":"a/b","size":1,"sha256":"` + strings.Repeat("c", 64) + `"}]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"format":1,"files":[{"path":"../x"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManifest(b)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q is not one line", err)
			}
			return
		}
		for _, file := range m.Files {
			if !cleanRel(file.Path) || strings.HasPrefix(file.Path, "..") || strings.HasPrefix(file.Path, "/") {
				t.Fatalf("accepted path %q", file.Path)
			}
		}
	})
}

// An ensemble's weights come from the lane's entries of several folds.
func TestEnsembleWeightsFromSeveralFolds(t *testing.T) {
	f := newFixture(t)
	ck1 := put(t, f.dir, "src/fold1.ckpt", "weights of fold 1", 0o644)
	sum1, _ := fileio.SHA256(ck1)
	if _, err := f.log.Append(audit.Entry{Role: audit.PluginRole("segmentation"), Action: audit.ActionLaneTrained,
		Outputs: map[string]string{"checkpoint": sum1}, Details: json.RawMessage(`{"lane":"unet-a","fold":1}`)}); err != nil {
		t.Fatal(err)
	}
	f.c.Checkpoints = append(f.c.Checkpoints, ck1)
	pkg := f.write(t)
	if v := verify(t, pkg, VerifyOptions{}); !v.OK() {
		t.Fatal(v.Problems)
	}
}

// TestBootstrap: the interval of the mean of 0, 1, …, 99 is the normal approximation's
// 49.5 ± 1.96 × 28.87 / √100 = [43.84, 55.16] within the resampling's own error (about
// 0.3 with 2000 resamples); equal values have a zero-width interval; fewer than two none;
// the same values give the same interval.
func TestBootstrap(t *testing.T) {
	v := make([]float64, 100)
	for i := range v {
		v[i] = float64(i)
	}
	lo, hi, ok := Bootstrap(v)
	if !ok || math.Abs(lo-43.84) > 0.8 || math.Abs(hi-55.16) > 0.8 {
		t.Errorf("interval [%.2f, %.2f], want about [43.84, 55.16]", lo, hi)
	}
	if lo2, hi2, _ := Bootstrap(v); lo2 != lo || hi2 != hi {
		t.Error("two intervals of the same values differ")
	}
	// (to the rounding of summing three 0.7s)
	if lo, hi, ok := Bootstrap([]float64{0.7, 0.7, 0.7}); !ok || math.Abs(lo-0.7) > 1e-12 || math.Abs(hi-0.7) > 1e-12 {
		t.Errorf("equal values: [%v, %v]", lo, hi)
	}
	if _, _, ok := Bootstrap([]float64{0.7}); ok {
		t.Error("one value has an interval")
	}
	s := Score("test", "dice", 0.5, []float64{0.5})
	if s.Low != 0.5 || s.High != 0.5 || !strings.Contains(s.Interval, "none") {
		t.Errorf("one case: %+v", s)
	}
}
