package task

import (
	"slices"
	"strings"
	"testing"

	"amid/plugins/taskspec"
)

var findingsAttr = taskspec.Attribute{Name: "findings", Classes: []string{"Effusion", "Infiltration", "Nodule"}, MultiLabel: true}

// TestFindingCells: a cell of names and a finding's cell under each policy, and their
// errors.
func TestFindingCells(t *testing.T) {
	for cell, want := range map[string][]int{
		"Effusion|Infiltration": {1, 1, 0}, "No Finding": {0, 0, 0}, "no finding": {0, 0, 0}, "": {0, 0, 0},
		" nodule | Nodule ": {0, 0, 1},
	} {
		if got, err := Findings(findingsAttr, cell); err != nil || !slices.Equal(got, want) {
			t.Errorf("%q: %v %v, want %v", cell, got, err, want)
		}
	}
	for _, cell := range []string{"Hernia", "Effusion||Nodule", "Effusion|No Finding"} {
		if _, err := Findings(findingsAttr, cell); err == nil || !strings.Contains(err.Error(), "is not one of its findings") {
			t.Errorf("%q: %v", cell, err)
		}
	}
	for _, c := range []struct {
		cell, policy string
		want         int
	}{{"1.0", "", 1}, {"0", "", 0}, {"", "", 0}, {"-1.0", UncertainIgnore, -1}, {"-1", UncertainPositive, 1}, {"-1", UncertainNegative, 0}} {
		if got, err := FindingValue(c.cell, c.policy); err != nil || got != c.want {
			t.Errorf("%q under %q: %d %v, want %d", c.cell, c.policy, got, err, c.want)
		}
	}
	if _, err := FindingValue("-1", ""); err == nil || !strings.Contains(err.Error(), "names no policy") {
		t.Errorf("-1 without a policy: %v", err)
	}
	if _, err := FindingValue("0.5", UncertainIgnore); err == nil || !strings.Contains(err.Error(), "not 1, 0, -1") {
		t.Errorf("0.5: %v", err)
	}
}

// FuzzFindingCells: any cell gives findings of 0 and 1 for the names, a value of the
// policy for a column, or an error on one line; never a panic.
func FuzzFindingCells(f *testing.F) {
	for _, s := range []string{"Effusion|Infiltration", "No Finding", "-1.0", "1", "", "|"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cell string) {
		if got, err := Findings(findingsAttr, cell); err == nil {
			for _, v := range got {
				if v != 0 && v != 1 {
					t.Fatalf("%q: %v", cell, got)
				}
			}
		} else if strings.Contains(err.Error(), "\n") && !strings.Contains(cell, "\n") {
			t.Fatalf("error spans lines: %q", err)
		}
		for _, p := range []string{"", UncertainIgnore, UncertainPositive, UncertainNegative} {
			v, err := FindingValue(cell, p)
			if err == nil && (v < -1 || v > 1 || (v == -1 && p != UncertainIgnore)) {
				t.Fatalf("%q under %q: %d", cell, p, v)
			}
		}
	})
}
