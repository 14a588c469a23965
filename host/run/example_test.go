package run_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"

	"amid/host/audit"
	"amid/host/catalog"
	"amid/host/planner"
	"amid/host/run"
	"amid/host/store"
	"amid/host/supervisor"
	"amid/host/synth"
)

// A whole run of the demo task (synth.Demo: six generated head CTs with six labels to
// train on, one to test) with the segmentation plugin and the rules planner kept to one lane, within a
// 12 s budget: profile, plan, train on two folds, choose, predict the test set, verify
// (a byte-for-byte re-run included) and export a package whose audit log verifies. The
// run folder's run.json is the durable state a resumed run continues from.
func Example() {
	dir, err := os.MkdirTemp("", "amid-run-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	data := filepath.Join(dir, "data")
	if err := synth.Demo(data, 6, 3); err != nil {
		log.Fatal(err)
	}

	// The host's side: the store and the plugin catalog (amid/host.Open does this for the
	// programs), with the plugin trusted.
	st, err := store.Open(filepath.Join(dir, "amid.db"), 0)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	cat := &catalog.Catalog{Builtin: run.BuiltPlugins(), Store: st}
	seg, err := cat.Find("segmentation")
	if err != nil {
		log.Fatal(err)
	}
	if err := cat.Trust(seg); err != nil {
		log.Fatal(err)
	}

	r, err := run.New(run.Options{
		Task: filepath.Join(data, "task.yaml"), Dir: filepath.Join(dir, "run"),
		Budget: 12 * time.Second, Folds: 2, Planner: planner.Rules{MaxLanes: 1},
	}, run.Env{Catalog: cat, Supervisor: supervisor.Options{Logger: hclog.NewNullLogger()}})
	if err != nil {
		log.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		log.Fatal(err)
	}
	s, err := run.LoadState(filepath.Join(dir, "run"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Phase, len(s.Lanes), s.Lanes[0].Plugin, s.Chosen == s.Lanes[0].ID)
	n, _, err := audit.VerifyJSONLFile(filepath.Join(s.Package, "audit.jsonl"))
	fmt.Println(n > 0, err)
	// Output:
	// done 1 segmentation true
	// true <nil>
}
