package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"amid/assets/realdata"
	"amid/host/task"
)

// TestMultiLabelTaskInit: `amid task init` on each multi-label test dataset (the real
// mosaics of TestMultiLabelLayouts, as NIH ChestX-ray14 and as CheXpert keep their labels)
// writes the task that test uses: a classification of one multi-label attribute with its
// findings, read from the same table by the same columns (CheXpert's Sex column left
// out), under the policy for −1 the user names (--uncertain).
func TestMultiLabelTaskInit(t *testing.T) {
	if testing.Short() {
		t.Skip("writes the real-image mosaics")
	}
	realdata.Path(t, cranium) // skips without the cache, or fails in CI
	for _, l := range multiLayouts() {
		t.Run(l.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeMulti(t, l, dir)
			hand, err := task.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			args := []string{"task", "init", dir, "--id", "mosaic"}
			if u := hand.Data.Train.Label.Uncertain; u != "" {
				// What −1 means is the user's to say: init asks rather than guesses.
				args = append(args, "--uncertain", u)
			}
			if _, e, code := run(t, args...); code != 0 {
				t.Fatalf("amid task init: exit %d: %s", code, e)
			}
			g, err := task.Load(filepath.Join(dir, "task.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			hl, gl := hand.Data.Train.Label, g.Data.Train.Label
			if g.Kind != hand.Kind || !slices.Equal(g.Data.Train.Images, hand.Data.Train.Images) || !slices.Equal(g.Data.Test.Images, hand.Data.Test.Images) ||
				gl.Path != hl.Path || gl.Format != hl.Format || gl.IDColumn != hl.IDColumn || gl.ValueColumn != hl.ValueColumn ||
				!slices.Equal(gl.Columns, hl.Columns) || gl.Uncertain != hl.Uncertain {
				t.Errorf("guessed %s %v %v label %+v; the test's task is %s %v %v label %+v", g.Kind, g.Data.Train.Images, g.Data.Test.Images, gl,
					hand.Kind, hand.Data.Train.Images, hand.Data.Test.Images, hl)
			}
			lower := func(cs []string) []string {
				out := make([]string, len(cs))
				for i, c := range cs {
					out[i] = strings.ToLower(c)
				}
				slices.Sort(out)
				return out
			}
			if len(g.Attributes) != 1 || !g.Attributes[0].MultiLabel || !slices.Equal(lower(g.Attributes[0].Classes), lower(hand.Attributes[0].Classes)) {
				t.Errorf("guessed attributes %+v, want one multi-label attribute of %v", g.Attributes, hand.Attributes[0].Classes)
			}
		})
	}
}
