package main

// driverSource is the program that runs one task end to end through amid/host/run with a
// seed, built in the tree of each loop compared (the old loop's commit and this one), so
// that both run under the same harness: its own store, the built plugins trusted, the task's answers scored on the test set. Its log goes to stdout; run.json in
// the run folder holds the result. Its API (run.New, run.Options, catalog.Catalog) is the
// same in both trees.
const driverSource = `package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"amid/host/catalog"
	"amid/host/run"
	"amid/host/store"
	"amid/host/supervisor"
)

// usage: driver PLUGINS TASK.yaml ANSWERS RUNDIR BUDGET SEED
func main() {
	a := os.Args[1:]
	budget, err := time.ParseDuration(a[4])
	if err != nil {
		fail(err)
	}
	seed, err := strconv.ParseInt(a[5], 10, 64)
	if err != nil {
		fail(err)
	}
	env, done := runEnv(a[0], a[3]+".home")
	defer done()
	r, err := run.New(run.Options{Task: a[1], Answers: a[2], Dir: a[3], Budget: budget, Seed: seed}, env)
	if err != nil {
		fail(err)
	}
	if err := r.Run(context.Background()); err != nil {
		fail(err)
	}
}

` + driverCommon

// driverCommon is what both drivers (this one and improve.go's) share: the run's
// environment, with its own store and every built plugin trusted, its events printed.
const driverCommon = `
// runEnv is a run's environment with a store in home and the plugins built in plugins
// trusted; call done at the end.
func runEnv(plugins, home string) (run.Env, func()) {
	if err := os.MkdirAll(home, 0o755); err != nil {
		fail(err)
	}
	st, err := store.Open(filepath.Join(home, "amid.db"), 0)
	if err != nil {
		fail(err)
	}
	cat := &catalog.Catalog{Builtin: plugins, Store: st}
	built, err := os.ReadDir(plugins)
	if err != nil {
		fail(err)
	}
	for _, b := range built {
		e, err := cat.Find(strings.TrimPrefix(b.Name(), "amid-plugin-"))
		if err != nil {
			fail(err)
		}
		if err := cat.Trust(e); err != nil {
			fail(err)
		}
	}
	began := time.Now()
	return run.Env{Catalog: cat, Supervisor: supervisor.Options{Logger: hclog.NewNullLogger()}, Events: func(ev run.Event) {
		if ev.Progress == nil {
			fmt.Printf("%7.1fs %s %s %s\n", time.Since(began).Seconds(), ev.Phase, ev.Lane, ev.Message)
		}
	}}, func() { st.Close() }
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "driver:", err)
	os.Exit(1)
}
`
