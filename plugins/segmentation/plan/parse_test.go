package plan

import (
	"encoding/json"
	"errors"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the fingerprints in testdata/")

// seeds are the test fingerprints, committed as JSON for the fuzz corpus and as examples
// of the format.
var seeds = map[string]func() Fingerprint{"isles_like": islesLike, "ct_like": ctLike, "puma_like": pumaLike}

func TestParseFingerprint(t *testing.T) {
	for name, fp := range seeds {
		path := filepath.Join("testdata", name+".json")
		if *update {
			b, err := json.MarshalIndent(fp(), "", " ")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := ParseFingerprint(data)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		want := fp()
		if len(f.Cases) != len(want.Cases) || !reflect.DeepEqual(f.Cases[0], want.Cases[0]) || f.Classes != want.Classes || f.Modality != want.Modality || f.FGHigh != want.FGHigh {
			t.Fatalf("%s parsed as %+v", path, f)
		}
	}
	// The host's profile carries more fields than the planner reads; they are ignored.
	data, err := os.ReadFile(filepath.Join("testdata", "profile_like.json"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := ParseFingerprint(data)
	if err != nil {
		t.Fatalf("profile_like.json: %v", err)
	}
	if len(f.Cases) != 2 || !reflect.DeepEqual(f.Cases[1], Case{Dims: [3]int{72, 112, 112}, Spacing: [3]float64{2, 2, 2}}) || f.Modality != "MR" ||
		f.Channels != 2 || f.Classes != 2 || f.FGStd != 1 || len(f.ClassFrequency) != 2 {
		t.Fatalf("profile_like.json parsed as %+v", f)
	}
	for _, tc := range []struct{ json, want string }{
		{`{"cases":[],"channels":1,"classes":2}`, "no cases"},
		{`{"cases":[{"dims":[1,2,3],"spacing":[1,0,1]}],"channels":1,"classes":2}`, "case 0 has dims"},
		{`{"cases":[{"dims":[1,2,3],"spacing":[1,1,1]}],"channels":1,"classes":1}`, "1 channels and 1 classes"},
		{`{"cases":[{"dims":[1,2,2000000],"spacing":[1,1,1]}],"channels":1,"classes":2}`, "at most 1048576"},
		{`{"cases":[{"dims":[1,2,3],"spacing":[1,1,1]}],"channels":1,"classes":2} {}`, "data after"},
		{`{"cases":`, "unexpected EOF"},
	} {
		_, err := ParseFingerprint([]byte(tc.json))
		if !errors.Is(err, ErrFingerprint) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want %q, got %v", tc.json, tc.want, err)
		}
	}
}

// FuzzParseFingerprint: any input parses or fails with ErrFingerprint; a parsed
// fingerprint plans within a 1 GiB budget or fails with ErrBudget, and every planned lane
// fits the budget.
func FuzzParseFingerprint(f *testing.F) {
	for _, name := range append(slices.Sorted(maps.Keys(seeds)), "profile_like") {
		if b, err := os.ReadFile(filepath.Join("testdata", name+".json")); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"cases":[{"dims":[1,9,9],"spacing":[1,1,1]}],"channels":1,"classes":2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fp, err := ParseFingerprint(data)
		if err != nil {
			if !errors.Is(err, ErrFingerprint) {
				t.Fatalf("error of no known kind: %v", err)
			}
			return
		}
		b := Budget{Bytes: 1 << 30}
		cs, err := Plan(fp, b)
		if err != nil {
			if !errors.Is(err, ErrBudget) {
				t.Fatalf("plan error of no known kind: %v", err)
			}
			return
		}
		for _, c := range cs {
			if c.Bytes > b.Bytes || c.Bytes <= 0 || c.Batch < MinBatch {
				t.Fatalf("%s: %d bytes, batch %d", c.Lane, c.Bytes, c.Batch)
			}
		}
	})
}
