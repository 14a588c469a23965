package run

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"amid/assets/ci"
	"amid/assets/fileio"
	"amid/host/audit"
	"amid/host/audit/audittest"
	"amid/host/dicomweb"
	"amid/host/dicomweb/dicomwebtest"
	"amid/host/export"
	"amid/host/predict"
	"amid/viewer/dicom/seg"
	"amid/viewer/edit"
	"amid/viewer/imageio"
)

// copyDir copies the folder src into dst, links followed.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkPredictNew uses the package of a DICOM run as a radiologist would on new patients
// (amid predict): the test studies, copied under names no pattern knows (Mr_Smith_1, …),
// and a folder that holds no image are predicted through predict.Apply. Every study gets
// the package's own prediction byte for byte, a DICOM SEG that references the series the
// package's own SEG references, and a row per label in volumes.csv; the folder without an image fails alone; the predict run's audit
// log is an intact chain that names the package's audit anchor and no case. A package
// whose plugin binary lost a byte is refused before anything is predicted.
func checkPredictNew(t *testing.T, pkg, data string, ids []string) {
	in := filepath.Join(t.TempDir(), "incoming")
	names := map[string]string{}
	var inputs []string
	for k, id := range ids {
		name := "Mr_Smith_" + string(rune('1'+k))
		copyDir(t, filepath.Join(data, "test", "images", id), filepath.Join(in, name))
		names[name] = id
		inputs = append(inputs, filepath.Join(in, name))
	}
	if err := os.MkdirAll(filepath.Join(in, "scanner-notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(in, "scanner-notes", "notes.txt"), []byte("no image"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "predicted")
	res, err := predict.Apply(context.Background(), pkg, append(inputs, filepath.Join(in, "scanner-notes")), out, predict.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	last := res.Cases[len(res.Cases)-1]
	if res.Failed != 1 || len(res.Cases) != len(ids)+1 || last.Error == "" {
		t.Fatalf("results %+v: want the folder without an image failed alone", res.Cases)
	}
	t.Logf("the folder without an image: %s", last.Error)
	// Each predicted study has a confidence (the segmentation plugin's), and the review
	// order holds them, the least sure first.
	for _, c := range res.Cases[:len(ids)] {
		if c.Confidence == nil || *c.Confidence <= 0 || *c.Confidence > 1 {
			t.Errorf("%s: confidence %v", c.ID, c.Confidence)
		}
	}
	if len(res.ReviewOrder) != len(ids) {
		t.Errorf("review order %v", res.ReviewOrder)
	}
	for _, c := range res.Cases[:len(ids)] {
		id := names[c.ID]
		got, err := os.ReadFile(filepath.Join(out, c.Predictions[0]))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(pkg, "predictions", id+".nii.gz"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s (test case %s): the prediction differs from the package's", c.ID, id)
		}
		s, err := seg.Read(filepath.Join(out, c.SEG))
		if err != nil {
			t.Fatal(err)
		}
		// The package's own SEG of the study references its source series (checked by
		// TestDICOMEndToEnd before).
		ref, err := seg.Read(filepath.Join(pkg, "dicom", id+".dcm"))
		if err != nil {
			t.Fatal(err)
		}
		if s.ReferencedSeriesUID != ref.ReferencedSeriesUID || s.StudyInstanceUID != ref.StudyInstanceUID || len(s.Frames) != len(ref.Frames) {
			t.Errorf("%s: the SEG references series %s with %d frames, the package's %s with %d", c.ID, s.ReferencedSeriesUID, len(s.Frames), ref.ReferencedSeriesUID, len(ref.Frames))
		}
	}
	f, err := os.Open(filepath.Join(out, predict.FileVolumes))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	// The demo task's five labels but background, for each study.
	if err != nil || len(rows) != 1+5*len(ids) || strings.Join(rows[0], ",") != "case_id,label,name,voxels,volume_ml" {
		t.Errorf("volumes.csv: %v %v", rows, err)
	}
	// A reader's decisions go into the predict run's own log: two on the first study
	// (the newest counts), none on the folder without a prediction or of another word.
	first := res.Cases[0].ID
	for _, d := range []string{Rejected, Approved} {
		if err := predict.Review(out, export.Decision{Case: first, Decision: d, Reviewer: "reader", Note: "checked " + d}); err != nil {
			t.Fatal(err)
		}
	}
	if err := predict.Review(out, export.Decision{Case: last.ID, Decision: Approved}); err == nil || !strings.Contains(err.Error(), "has no prediction") {
		t.Errorf("a decision on a case without a prediction: %v", err)
	}
	if err := predict.Review(out, export.Decision{Case: first, Decision: "maybe"}); err == nil {
		t.Error("a decision that is neither approved nor rejected was taken")
	}
	if ds, err := predict.Decisions(out); err != nil || len(ds) != 1 || ds[0].Decision != Approved || ds[0].Note != "checked approved" {
		t.Errorf("decisions %+v %v: want the first study approved", ds, err)
	}
	checkCorrection(t, out, res.Cases[0])
	// Apply's entries (started, one per study, the failed folder, done), the two
	// decisions and the correction.
	n, _, err := audit.VerifyJSONLFile(filepath.Join(out, predict.FileAudit))
	if err != nil || n != len(ids)+6 {
		t.Fatalf("the predict audit log: %d entries, %v; want %d", n, err, len(ids)+6)
	}
	b, _ := os.ReadFile(filepath.Join(out, predict.FileAudit))
	for _, name := range []string{"Mr_Smith", "scanner-notes", "notes.txt", ids[0]} {
		if bytes.Contains(b, []byte(name)) {
			t.Errorf("the predict audit log names %q", name)
		}
	}
	var man export.Manifest
	readJSONT(t, filepath.Join(pkg, "manifest.json"), &man)
	entries, _ := audit.ReadJSONL(bytes.NewReader(b))
	var started map[string]any
	if err := json.Unmarshal(entries[0].Details, &started); err != nil || started["package_audit_last_hash"] != man.Audit.LastHash {
		t.Errorf("the first entry %s does not name the package's audit anchor %s", entries[0].Details, man.Audit.LastHash)
	}

	// The package's zip predicts the same.
	zipped := filepath.Join(t.TempDir(), "from-zip")
	zres, err := predict.Apply(context.Background(), filepath.Join(filepath.Dir(pkg), "package.zip"), inputs[:1], zipped, predict.Options{})
	if err != nil || zres.Failed != 0 {
		t.Fatalf("the package's zip: %+v %v", zres, err)
	}
	a, _ := os.ReadFile(filepath.Join(zipped, zres.Cases[0].Predictions[0]))
	b0, _ := os.ReadFile(filepath.Join(out, res.Cases[0].Predictions[0]))
	if !bytes.Equal(a, b0) {
		t.Error("the package's zip predicts otherwise than its folder")
	}
	if _, err := os.Stat(filepath.Join(zipped, ".work")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the unpacked package stayed: %v", err)
	}
	// The task a review reads back (for a correction's DICOM SEG) from the folder and from
	// the zip, whose unpacked copy is gone by then.
	fromDir, err := predict.PackageTask(pkg)
	if err != nil {
		t.Fatal(err)
	}
	fromZip, err := predict.PackageTask(filepath.Join(filepath.Dir(pkg), "package.zip"))
	if err != nil || fromZip.ID != fromDir.ID || len(fromZip.Labels) != len(fromDir.Labels) {
		t.Errorf("the zip's task %+v (%v), the folder's %+v", fromZip, err, fromDir)
	}
	if _, err := predict.PackageTask(filepath.Join(in, "scanner-notes", "notes.txt")); err == nil {
		t.Error("a text file was read as a package")
	}

	changed := filepath.Join(t.TempDir(), "package")
	copyDir(t, pkg, changed)
	bin := filepath.Join(changed, filepath.FromSlash(man.Plugin.Binary))
	raw, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/2] ^= 1
	if err := os.WriteFile(bin, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	out2 := filepath.Join(t.TempDir(), "refused")
	_, err = predict.Apply(context.Background(), changed, []string{in}, out2, predict.Options{})
	if !errors.Is(err, export.ErrFailed) || !strings.Contains(err.Error(), "fails its check, so nothing was predicted") {
		t.Errorf("a changed plugin: %v", err)
	}
	if _, err := os.Stat(out2); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused package left %s: %v", out2, err)
	}
}

// checkPredictPACS is the round trip through a real PACS (Orthanc on loopback,
// .ci/orthanc.sh): the test studies are sent to it as a modality sends them (storescu),
// found by QIDO-RS, retrieved by WADO-RS, predicted, and each DICOM SEG stored back by
// STOW-RS. The PACS then holds, in each study, the very SEG written locally, whose label
// map is the package's own prediction of that study. A PACS that refuses the store (a
// wrong password) fails each case at the send alone, its files kept. A watch of the PACS
// predicts each study once, across restarts. A PACS that is down is one sentence.
func checkPredictPACS(t *testing.T, pkg, data string, ids []string) {
	srv, err := dicomwebtest.Start(18152)
	if err != nil {
		ci.Missing(t, err.Error())
	}
	t.Cleanup(func() { srv.Stop() })
	for _, id := range ids {
		if err := srv.Send(filepath.Join(data, "test", "images", id)); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	c := &dicomweb.Client{URL: srv.URL, User: srv.User, Password: srv.Password}
	uids, err := predict.FindStudies(ctx, c, []string{"ModalitiesInStudy=CT"})
	if err != nil || len(uids) != len(ids) {
		t.Fatalf("found %v, %v; sent %d studies", uids, err, len(ids))
	}
	inputs, err := predict.Retrieve(ctx, c, uids, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "predicted")
	res, err := predict.Apply(ctx, pkg, inputs, out, predict.Options{Send: c})
	if err != nil || res.Failed != 0 {
		t.Fatalf("apply: %+v %v", res, err)
	}
	// The package's own SEG of each test study names the study: its prediction is the one
	// to match.
	byStudy := map[string]string{}
	for _, id := range ids {
		ref, err := seg.Read(filepath.Join(pkg, "dicom", id+".dcm"))
		if err != nil {
			t.Fatal(err)
		}
		byStudy[ref.StudyInstanceUID] = id
	}
	for _, cr := range res.Cases {
		if !cr.Sent {
			t.Errorf("%s: not sent", cr.ID)
		}
		id, ok := byStudy[cr.ID]
		if !ok {
			t.Fatalf("study %s is no test study of the package", cr.ID)
		}
		got, _ := os.ReadFile(filepath.Join(out, cr.Predictions[0]))
		want, _ := os.ReadFile(filepath.Join(pkg, "predictions", id+".nii.gz"))
		if !bytes.Equal(got, want) {
			t.Errorf("study of %s: the prediction differs from the package's", id)
		}
		local, err := os.ReadFile(filepath.Join(out, cr.SEG))
		if err != nil {
			t.Fatal(err)
		}
		files, err := c.Retrieve(ctx, cr.ID, filepath.Join(t.TempDir(), "back"))
		if err != nil {
			t.Fatal(err)
		}
		stored := 0
		for _, f := range files {
			if b, _ := os.ReadFile(f); bytes.Equal(b, local) {
				stored++
			}
		}
		if stored != 1 || len(files) != dicomCount(t, filepath.Join(data, "test", "images", id))+1 {
			t.Errorf("study of %s: the PACS holds %d objects, %d of them the SEG written; want the study's and the SEG", id, len(files), stored)
		}
	}
	// A PACS that refuses the store: every case fails at the send, its files kept.
	refusing := *c
	refusing.Password, refusing.Tries = "not-the-password", 1
	out2 := filepath.Join(t.TempDir(), "refused")
	res, err = predict.Apply(ctx, pkg, inputs, out2, predict.Options{Send: &refusing})
	if err != nil || res.Failed != len(ids) {
		t.Fatalf("a refusing PACS: %+v %v", res, err)
	}
	for _, cr := range res.Cases {
		if cr.Sent || !strings.Contains(cr.Error, "not stored in the PACS") || strings.Contains(cr.Error, "not-the-password") {
			t.Errorf("%s: %+v", cr.ID, cr)
		}
		if _, err := os.Stat(filepath.Join(out2, cr.SEG)); err != nil {
			t.Errorf("%s: the SEG is lost: %v", cr.ID, err)
		}
	}
	// Watching the PACS: its studies are predicted once each; a watch started again
	// predicts none twice; a study sent later is predicted at the next round.
	wdir := filepath.Join(t.TempDir(), "watch")
	var said []string
	wt := &predict.Watch{Package: pkg, Client: c, Query: []string{"ModalitiesInStudy=CT"}, Out: wdir, Rounds: 1,
		Log: func(s string) { said = append(said, s) }}
	if err := wt.Run(ctx); err != nil || len(said) != len(ids) {
		t.Fatalf("watch: %v, said %q", err, said)
	}
	said = nil
	if err := wt.Run(ctx); err != nil || len(said) != 0 {
		t.Errorf("the watch started again: %v, said %q", err, said)
	}
	train, _ := os.ReadDir(filepath.Join(data, "train", "images"))
	if err := srv.Send(filepath.Join(data, "train", "images", train[0].Name())); err != nil {
		t.Fatal(err)
	}
	if err := wt.Run(ctx); err != nil || len(said) != 1 || !strings.Contains(said[0], "(0 failed)") {
		t.Errorf("a study sent later: %v, said %q", err, said)
	}
	var rec struct {
		Done map[string]json.RawMessage `json:"done"`
	}
	readJSONT(t, filepath.Join(wdir, predict.FileWatch), &rec)
	if len(rec.Done) != len(ids)+1 {
		t.Errorf("watch.json records %d studies, want %d", len(rec.Done), len(ids)+1)
	}
	// A PACS that is down.
	srv.Stop()
	down := *c
	down.Tries = 1
	if _, err := predict.FindStudies(ctx, &down, nil); !errors.Is(err, dicomweb.ErrPACS) || strings.Contains(err.Error(), srv.Password) {
		t.Errorf("a PACS that is down: %v", err)
	}
}

// dicomCount counts the files under dir.
func dicomCount(t *testing.T, dir string) int {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// checkCorrection corrects the prediction of case c of the predict run in out as a reader
// does in the viewer (a disc of label 2, 6 mm across, on the middle slice) and records it:
// the prediction stays as it was, the correction lies beside it with its DICOM SEG (the
// reader's segments, SEMIAUTOMATIC), and the audit entry holds its sha256 and the voxels
// each label took or lost, never the case's name. A corrected decision without its file,
// or with a file outside the corrections folder, is refused.
func checkCorrection(t *testing.T, out string, c predict.CaseResult) {
	t.Helper()
	predPath := filepath.Join(out, c.Predictions[0])
	before, err := fileio.PathSHA256(predPath)
	if err != nil {
		t.Fatal(err)
	}
	pred, err := imageio.Read(predPath)
	if err != nil {
		t.Fatal(err)
	}
	ed, err := edit.New(pred)
	if err != nil {
		t.Fatal(err)
	}
	mid := [3]int{pred.Dims[0] / 2, pred.Dims[1] / 2, pred.Dims[2] / 2}
	if err := ed.Dab(2, mid, 6, 2); err != nil {
		t.Fatal(err)
	}
	changes := ed.Changes()
	if len(changes) == 0 {
		t.Fatal("the disc changed nothing")
	}
	for _, bad := range []export.Decision{
		{Case: c.ID, Decision: export.Corrected},
		{Case: c.ID, Decision: export.Corrected, Correction: "../" + c.ID + ".nii.gz"},
		{Case: c.ID, Decision: Approved, Correction: "corrections/" + c.ID + ".nii.gz"},
	} {
		if err := predict.Review(out, bad); err == nil {
			t.Errorf("decision %+v was taken", bad)
		}
	}
	rel, err := export.SaveCorrection(out, c.ID, ed.Labels())
	if err != nil {
		t.Fatal(err)
	}
	if err := predict.Review(out, export.Decision{Case: c.ID, Decision: export.Corrected, Correction: rel, Reviewer: "reader"}); err != nil {
		t.Fatal(err)
	}
	if after, _ := fileio.PathSHA256(predPath); after != before {
		t.Error("the correction changed the prediction's file")
	}
	segPath := filepath.Join(out, export.CorrectionsDir, c.ID+".dcm")
	back, err := imageio.ReadLabels(segPath, pred) // the prediction lies on the image's grid
	if err != nil {
		t.Fatal(err)
	}
	for i := range back.Len() {
		if back.AtIndex(i) != ed.Labels().AtIndex(i) {
			t.Fatalf("voxel %d: the correction's SEG holds %v, the correction %v", i, back.AtIndex(i), ed.Labels().AtIndex(i))
		}
	}
	if s, err := seg.Read(segPath); err != nil || len(s.Segments) == 0 || s.Segments[0].AlgorithmType != "SEMIAUTOMATIC" {
		t.Errorf("the correction's SEG: %+v %v; want SEMIAUTOMATIC segments", s, err)
	}
	entries := audittest.Entries(t, filepath.Join(out, "audit.db"))
	last := entries[len(entries)-1]
	var det struct {
		Decision string        `json:"decision"`
		Changes  []edit.Change `json:"changes"`
	}
	sum, _ := fileio.PathSHA256(filepath.Join(out, rel))
	if err := json.Unmarshal(last.Details, &det); err != nil || det.Decision != export.Corrected || !slices.Equal(det.Changes, changes) || last.Outputs["correction"] != sum {
		t.Errorf("the correction's audit entry %s %v: want its changes %v and sha256 %s", last.Details, last.Outputs, changes, sum)
	}
}
