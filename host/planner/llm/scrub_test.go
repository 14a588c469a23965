package llm

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"amid/host/planner"
)

func TestText(t *testing.T) {
	s := NewScrubber([]string{"St. Nowhere Hospital", "  ", "ACME"}, nil)
	for _, c := range []struct{ in, want string }{
		{"Segment the liver in portal-venous CT.", "Segment the liver in portal-venous CT."},
		{"data in /data/DOE_JANE/ct.nii.gz now", "data in [path] now"},
		{`see C:\scans\x.dcm.`, "see [path]."},
		{"files like case_001.nii.gz", "files like [path]"},
		{"~/amid/runs", "[path]"},
		{"write .nii.gz or .seg.nrrd files", "write .nii.gz or .seg.nrrd files"},
		{"patient DOE^JANE^^^ scanned", "patient [name] scanned"},
		{"uid 1.2.840.113619.2.55.3 here", "uid [uid] here"},
		{"born 1962-03-15, scanned 03/15/2020", "born [date], scanned [path]"},
		{"MRN 19620315 and 0012345678 (.19620315)", "MRN [id] and [id] (.[id])"},
		{"case LIDC-IDRI-0001 and sub-strokecase0042", "case [id] and [id]"},
		// Numbers, shapes, versions and short names pass.
		{"lr 0.000125, 256x256x128 voxels, 1.5mm, U-Net, ResNet50, ISLES22, 2022, p99.5, 12 epochs",
			"lr 0.000125, 256x256x128 voxels, 1.5mm, U-Net, ResNet50, ISLES22, 2022, p99.5, 12 epochs"},
		{"from st. nowhere hospital (ACME)", "from [redacted] ([redacted])"},
		{"ACMEACME", "[redacted][redacted]"},
	} {
		got, n := s.Text(c.in)
		if got != c.want {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.want)
		}
		if (n > 0) != (got != c.in) {
			t.Errorf("Text(%q): count %d for %q", c.in, n, got)
		}
	}
	// An identifier that is part of the placeholder does not loop.
	if got, _ := NewScrubber([]string{"red"}, nil).Text("red dact"); got != "[redacted] dact" {
		t.Errorf("identifier inside the placeholder: %q", got)
	}
}

func TestDocument(t *testing.T) {
	s := NewScrubber([]string{"Jane Doe"}, nil)
	in := `{"id":"liver","description":"Liver CT from /mnt/pacs/export. Ask Jane Doe.","dims":3,
	 "data":{"train":{"images":["train/{id}_ct.nii.gz"],"label":{"path":"labels.csv"}}},
	 "metric":{"name":"dice","params":{"beta":1e-3}},"extra":{"LIDC-IDRI-0001":1,"note":"ok"},"Jane Doe":true}`
	out, rep := s.Document(json.RawMessage(in))
	want := `{"data":{"train":{"images":[],"label":{}}},"description":"Liver CT from [path]. Ask [redacted].","dims":3,` +
		`"extra":{"note":"ok"},"id":"liver","metric":{"name":"dice","params":{"beta":1e-3}}}`
	if string(out) != want {
		t.Errorf("Document:\n got %s\nwant %s", out, want)
	}
	// Dropped: the image pattern, the label path, the id-like key, the identifier key.
	if rep.Dropped != 4 || rep.Redacted != 2 {
		t.Errorf("report = %+v", rep)
	}
	if out, _ := s.Document(json.RawMessage(`not json`)); string(out) != "null" {
		t.Errorf("not JSON: %s", out)
	}
	if out, _ := s.Document(nil); string(out) != "null" {
		t.Errorf("empty: %s", out)
	}
}

func TestFingerprint(t *testing.T) {
	s := NewScrubber(nil, []string{"site_count"})
	in := `{"cases":[{"id":"case_0001","file":"a.nii.gz","modality":"CT","dims":[512,512,90],"spacing":[0.7,0.7,2.5],
	 "intensity":{"p0_5":-1000,"p99_5":1500,"mean":42.5},"seriesInstanceUID":"1.2.3.4.5","manufacturer":"GE"}],
	 "classFrequencies":{"0":0.97,"1":0.03,"0010":5},"patients":{"ACRIN-FLT-Breast_029":3},
	 "modality":"CT^X","dtype":"int16","site_count":4,"name":"Jane","contract":{"ok":true,"warnings":["train/x.nii.gz missing"]}}`
	out, rep := s.Fingerprint(json.RawMessage(in))
	want := `{"cases":[{"dims":[512,512,90],"intensity":{"mean":42.5,"p0_5":-1000,"p99_5":1500},"modality":"CT","spacing":[0.7,0.7,2.5]}],` +
		`"classFrequencies":{"0":0.97,"1":0.03},"dtype":"int16","patients":{},"site_count":4}`
	if string(out) != want {
		t.Errorf("Fingerprint:\n got %s\nwant %s", out, want)
	}
	// id, file, seriesInstanceUID, manufacturer, "0010", the patient key, "CT^X", name, contract.
	if rep.Dropped != 9 {
		t.Errorf("report = %+v", rep)
	}
}

func TestLeaks(t *testing.T) {
	s := NewScrubber([]string{"Jane Doe", "MRN-77"}, nil)
	if err := s.Leaks([]byte(`{"a":"JANE DOE"}`)); err == nil || err.Error() != "request carries configured identifier 1 of 2" {
		t.Errorf("Leaks = %v", err)
	}
	if err := s.Leaks([]byte(`{"a":"Jane"}`)); err != nil {
		t.Errorf("Leaks = %v", err)
	}
}

// The request builder passes every string of the input through the scrubber.
func TestBuildScrubsEverything(t *testing.T) {
	in := testInput()
	in.Task = json.RawMessage(`{"description":"cases of Jane Doe under /srv/data"}`)
	in.Kind = "segmentation /srv/data"
	in.Plugins[0].Candidates[0].Rationale = "tuned on /home/jane/scans"
	in.Plugins[0].Candidates[0].Config = []byte(`{"lr":0.001,"cache":"/home/jane/cache"}`)
	in.Results = append(in.Results, plannerResult("lane /x/y", "failed", "open /home/jane/DOE^JANE/1.dcm: no such file"))
	s := NewScrubber([]string{"jane doe"}, nil)
	b, rep, err := build(s, in)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"/srv", "/home", "jane", "DOE^JANE"} {
		if strings.Contains(strings.ToLower(string(b)), strings.ToLower(bad)) {
			t.Errorf("request carries %q: %s", bad, b)
		}
	}
	if rep.Redacted < 5 || rep.Dropped < 1 {
		t.Errorf("report = %+v", rep)
	}
	// Numbers pass the scrubber as they are; a configured identifier that is a number still
	// stops the request.
	in.Task = json.RawMessage(`{"birth":19620315}`)
	if _, _, err := build(NewScrubber([]string{"19620315"}, nil), in); err == nil || !strings.Contains(err.Error(), "llm request refused: request carries configured identifier 1 of 1") {
		t.Errorf("identifier in a number: err = %v", err)
	}
}

func plannerResult(lane, status, reason string) planner.Result {
	return planner.Result{Lane: lane, Plugin: "segmentation", Config: json.RawMessage(`{"lr":0.1}`), Score: math.NaN(), Status: status, Reason: reason}
}
