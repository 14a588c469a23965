package run

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"amid/host/export"
)

// checkCard reads the model card of a finished run's package: the out-of-fold validation
// score is the mean of the chosen lane's validated cases with an interval around it, the
// class scores are named by the task's labels, the software list holds the libraries the
// user fixed, the limits state the data's bounds, and the text version is there.
func checkCard(t *testing.T, st *State) {
	t.Helper()
	c, err := export.ReadCard(os.DirFS(st.Package))
	if err != nil || c == nil {
		t.Fatalf("model card: %v", err)
	}
	best := st.lane(st.Chosen)
	var per []float64
	for _, f := range best.Folds {
		if f.Status == FoldDone {
			per = append(per, sortedValues(f.PerCase)...)
		}
	}
	v := c.Scores[0]
	if v.Set != "validation (out of fold)" || v.Cases != len(per) || len(per) < 2 || v.Value != mean(per) || v.Low > v.Value || v.High < v.Value || v.Low == v.High {
		t.Errorf("validation score %+v, the lane's %d validated cases", v, len(per))
	}
	if _, ok := v.PerClass["dice brain"]; !ok {
		t.Errorf("class scores %v: want them named by the labels", v.PerClass)
	}
	found := map[string]bool{}
	for _, s := range c.Software {
		found[s.Name] = s.Version != ""
	}
	// A test binary records no module list (runtime/debug.ReadBuildInfo's Deps are
	// empty), and the card says so; bin/amid's card lists them (make run's package).
	want := []string{"Go", "AMID plugin segmentation", "BLAS", "Go modules"}
	if bi, _ := debug.ReadBuildInfo(); len(bi.Deps) > 0 {
		want = append(want[:3], "github.com/hashicorp/go-plugin", "go.etcd.io/bbolt")
	}
	for _, m := range want {
		if !found[m] {
			t.Errorf("the software list lacks %s with its version", m)
		}
	}
	if len(c.Limitations) < 2 || !strings.Contains(c.Limitations[0], "of modality CT") || !strings.Contains(c.IntendedUse, "not a medical device") {
		t.Errorf("limits %q, intended use %q", c.Limitations, c.IntendedUse)
	}
	if b, err := os.ReadFile(filepath.Join(st.Package, export.FileCardText)); err != nil || !strings.Contains(string(b), "## Quantitative analysis") {
		t.Errorf("model_card.md: %v", err)
	}
}
