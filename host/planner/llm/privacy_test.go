package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dcm "github.com/suyashkumar/dicom"
	"github.com/suyashkumar/dicom/pkg/tag"

	"amid/assets/realdata"
	"amid/host/planner"
	"amid/plugins/protocol"
	"amid/viewer/dicom"
)

// identifyingTags are the elements whose values no request may carry.
var identifyingTags = []tag.Tag{tag.PatientName, tag.PatientID, tag.PatientBirthDate, tag.OtherPatientIDs,
	tag.AccessionNumber, tag.InstitutionName, tag.ReferringPhysicianName, tag.StudyInstanceUID,
	tag.SeriesInstanceUID, tag.SOPInstanceUID, tag.StudyDate, tag.SeriesDate, tag.StudyID}

// identifiers reads a file's identifying values, and each part of a person name, that are
// at least 4 characters long (shorter ones, like a 3-digit study id, occur by chance in any
// JSON of numbers).
func identifiers(t *testing.T, path string) []string {
	t.Helper()
	ds, err := dcm.ParseFile(path, nil, dcm.SkipPixelData())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []string
	for _, tg := range identifyingTags {
		e, err := ds.FindElementByTag(tg)
		if err != nil {
			continue
		}
		vals, ok := e.Value.GetValue().([]string)
		if !ok {
			continue
		}
		for _, v := range vals {
			parts := append([]string{v}, strings.Split(v, "^")...)
			for _, p := range parts {
				if p = strings.TrimSpace(p); len(p) >= 4 {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// institution returns a file's Institution Name, or "".
func institution(t *testing.T, path string) string {
	t.Helper()
	ds, err := dcm.ParseFile(path, nil, dcm.SkipPixelData())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if e, err := ds.FindElementByTag(tag.InstitutionName); err == nil {
		if v, ok := e.Value.GetValue().([]string); ok && len(v) > 0 {
			return strings.TrimSpace(v[0])
		}
	}
	return ""
}

// withIdentity writes a copy of the real file src to dst with the patient's name, ID and
// birth date replaced, through the DICOM library's writer.
func withIdentity(t *testing.T, src, dst, name, id, birth string) {
	t.Helper()
	ds, err := dcm.ParseFile(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	for tg, v := range map[tag.Tag]string{tag.PatientName: name, tag.PatientID: id, tag.PatientBirthDate: birth} {
		e, err := dcm.NewElement(tg, []string{v})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(ds.Elements, func(x *dcm.Element) bool { return x.Tag == tg })
		if i >= 0 {
			ds.Elements[i] = e
		} else {
			ds.Elements = append(ds.Elements, e)
		}
	}
	sort.SliceStable(ds.Elements, func(i, j int) bool {
		a, b := ds.Elements[i].Tag, ds.Elements[j].Tag
		return a.Group < b.Group || a.Group == b.Group && a.Element < b.Element
	})
	f, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if err := dcm.Write(f, ds, dcm.SkipVRVerification()); err != nil {
		t.Fatalf("writing %s: %v", dst, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// caseStats is what a careless profiler might write per case: the statistics a planner
// needs, and also the case's patient id, its site, its file and the whole DICOM Meta
// (Series Instance UID included).
type caseStats struct {
	ID        string             `json:"id"`
	Site      string             `json:"site"` // Institution Name, to group cases by site
	File      string             `json:"file"`
	Meta      dicom.Meta         `json:"meta"`
	Modality  string             `json:"modality"`
	Dims      [3]int             `json:"dims"`
	Spacing   [3]float64         `json:"spacing"`
	Intensity map[string]float64 `json:"intensity"`
}

// TestPrivacyRealDICOM builds a planner input from real DICOM files that carry patient
// names, IDs, birth and study dates (TCIA files, and one rewritten with a name, an ID and
// a birth date), placed under folders named after their patients, and checks that none of
// it, nor any file path, reaches the endpoint, while the statistics do.
func TestPrivacyRealDICOM(t *testing.T) {
	root := t.TempDir()
	var (
		secrets = []string{root}
		cases   []caseStats
		failed  []string
	)
	add := func(path string) {
		secrets = append(secrets, path)
		secrets = append(secrets, identifiers(t, path)...)
		v, m, err := dicom.ReadFile(path)
		if err != nil {
			failed = append(failed, fmt.Sprintf("read %s: %v", path, err))
			return
		}
		ids := identifiers(t, path)
		st := caseStats{File: path, Meta: *m, Modality: m.Modality, Dims: [3]int{v.Dims[0], v.Dims[1], v.Dims[2]},
			Spacing: v.Spacing, Intensity: percentiles(v.Float32())}
		if len(ids) > 0 {
			st.ID = ids[0]
		}
		st.Site = institution(t, path)
		cases = append(cases, st)
	}
	for _, n := range []string{"1", "2", "3", "4", "5"} {
		src := realdata.Path(t, realdata.DicomTCIA+"/"+n+".dcm")
		ids := identifiers(t, src)
		if len(ids) == 0 {
			t.Fatalf("%s carries no identifier", src)
		}
		dir := filepath.Join(root, strings.NewReplacer("^", "_", " ", "_").Replace(ids[0]))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, "IM"+n+".dcm")
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
		add(dst)
	}
	// A real file given a name, an ID and a birth date by the DICOM writer.
	dir := filepath.Join(root, "Doe_Jane_MRN-4711-0815")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	named := filepath.Join(dir, "IM1.dcm")
	withIdentity(t, realdata.Path(t, realdata.DicomTCIA+"/1.dcm"), named, "Doe^Jane^Marie", "MRN-4711-0815", "19620315")
	add(named)
	for _, want := range []string{"Doe^Jane^Marie", "MRN-4711-0815", "19620315"} {
		if !slices.Contains(secrets, want) {
			t.Fatalf("the rewritten file does not carry %q: %q", want, secrets)
		}
	}
	if !slices.ContainsFunc(cases, func(c caseStats) bool { return c.Site != "" }) {
		t.Fatal("no file names its institution")
	}
	if len(cases) < 3 {
		t.Fatalf("only %d of 6 files read: %q", len(cases), failed)
	}

	// The fingerprint: the careless per-case records, patients keyed by id, the modalities.
	patients := map[string]int{}
	var modalities []string
	for _, c := range cases {
		patients[c.ID]++
		if !slices.Contains(modalities, c.Modality) {
			modalities = append(modalities, c.Modality)
		}
	}
	fp, err := json.Marshal(map[string]any{"cases": cases, "patients": patients, "modalities": modalities, "n": len(cases)})
	if err != nil {
		t.Fatal(err)
	}
	task, _ := json.Marshal(map[string]any{
		"id": "pet-lesions", "title": "Lesion segmentation", "kind": "segmentation", "dims": 3,
		"description": fmt.Sprintf("Segment lesions. Exported from %s; first case %s.", root, cases[0].ID),
		"data":        map[string]any{"train": map[string]any{"images": []string{root + "/{id}/IM1.dcm"}}},
	})
	in := planner.Input{
		Task: task, Kind: "segmentation", Dims: 3, Metric: "dice", HigherIsBetter: true, Fingerprint: fp,
		Plugins: []planner.Plugin{{Name: "segmentation", Schema: json.RawMessage(segSchema),
			Candidates: []protocol.Candidate{{Name: "unet-small", Config: []byte(`{"lr":0.001}`), Rationale: "default"}}}},
		Results: []planner.Result{{Lane: "unet-small", Plugin: "segmentation", Config: json.RawMessage(`{"lr":0.001}`),
			Score: 0.4, Folds: 1, Status: "failed", Reason: strings.Join(append(failed, "read "+named+": patient "+cases[0].ID), "; ")}},
		Budget: 10 * time.Minute, Remaining: 5 * time.Minute, Slots: 1,
	}

	// A garbage reply first, so a retry is captured too.
	e := newEndpoint(t, reply("no", 10, 1), reply(goodReply, 10, 10))
	p, _, _, _ := newTest(t, e, Config{})
	if lanes, err := p.Plan(context.Background(), in); err != nil || len(lanes) != 2 {
		t.Fatalf("lanes = %+v, err = %v", lanes, err)
	}
	e.mu.Lock()
	bodies := slices.Clone(e.bodies)
	e.mu.Unlock()
	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2", len(bodies))
	}
	for i, b := range bodies {
		// The raw body and the messages as the model reads them (JSON unescaped).
		var r chatRequest
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		texts := []string{string(b)}
		for _, m := range r.Messages {
			texts = append(texts, m.Content)
		}
		for _, s := range secrets {
			for _, txt := range texts {
				if strings.Contains(strings.ToLower(txt), strings.ToLower(s)) {
					t.Errorf("request %d carries %q", i+1, s)
					break
				}
			}
		}
	}
	// The statistics did travel: every case's dims and spacing, the modalities.
	var u payload
	if err := json.Unmarshal([]byte(e.requests(t)[0].Messages[1].Content), &u); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Cases []struct {
			Dims      [3]int             `json:"dims"`
			Spacing   [3]float64         `json:"spacing"`
			Modality  string             `json:"modality"`
			Intensity map[string]float64 `json:"intensity"`
		} `json:"cases"`
		Modalities []string `json:"modalities"`
	}
	if err := json.Unmarshal(u.Fingerprint, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Cases) != len(cases) || !slices.Equal(got.Modalities, modalities) {
		t.Fatalf("fingerprint sent: %s", u.Fingerprint)
	}
	for i, c := range cases {
		g := got.Cases[i]
		if g.Dims != c.Dims || g.Spacing != c.Spacing || g.Modality != c.Modality || g.Intensity["p99"] != c.Intensity["p99"] {
			t.Errorf("case %d sent as %+v, profiled as %+v", i, g, c)
		}
	}
	t.Logf("%d files, %d identifying values and paths checked in %d requests; fingerprint %d bytes sent of %d", len(cases), len(secrets), len(bodies), len(u.Fingerprint), len(fp))
}

// percentiles returns the 1st, 50th and 99th percentiles and the mean of a sample of vs.
func percentiles(vs []float32) map[string]float64 {
	// A profiler samples large images: every k-th voxel, at most 1<<16 of them.
	k := max(1, len(vs)>>16)
	var s []float32
	for i := 0; i < len(vs); i += k {
		s = append(s, vs[i])
	}
	slices.Sort(s)
	if len(s) == 0 {
		return nil
	}
	mean := 0.0
	for _, v := range s {
		mean += float64(v)
	}
	at := func(q float64) float64 { return float64(s[int(q*float64(len(s)-1))]) }
	return map[string]float64{"p1": at(0.01), "p50": at(0.5), "p99": at(0.99), "mean": mean / float64(len(s))}
}
