// Package host opens AMID for a front end: the CLI (app/cli), the desktop program (app/ui)
// and whatever else drives runs. Open takes the settings as a value (config.Settings: the
// data and plugin folders) and returns the store in the data folder, the plugin catalog over
// the built-in and the user's plugin folders, and the supervisor's options (with the device
// the plugins compute on); Env hands the last two to a run. Nothing here reads or writes the environment: a front end that honours
// $AMID_HOME says so with config.Settings.WithEnv.
//
// The built-in plugins' sha256 are embedded by the build: `make build` and `make package`
// build the plugins first and link the AMID programs with
//
//	-ldflags=-X=amid/host.builtinSums=NAME:SHA256,NAME:SHA256,...
//
// (the Makefile's BUILTIN_LDFLAGS). The catalog trusts exactly those binaries in the
// built-in folder (catalog.Catalog.BuiltinSums); a plain `go build` embeds none, and then
// every plugin needs `amid plugins trust`.
package host

import (
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/hashicorp/go-hclog"

	"amid/host/catalog"
	"amid/host/config"
	"amid/host/run"
	"amid/host/store"
	"amid/host/supervisor"
)

// builtinSums is set by the linker: NAME:SHA256 pairs of the built-in plugins, separated by
// commas; empty in a build that names none.
var builtinSums string

// BuiltinSums returns the built-in plugins' sha256 by name, as this build embeds them
// (none for a plain go build). A malformed list is a build defect, reported as an error.
func BuiltinSums() (map[string]string, error) { return parseSums(builtinSums) }

func parseSums(s string) (map[string]string, error) {
	out := map[string]string{}
	if s == "" {
		return out, nil
	}
	for _, pair := range strings.Split(s, ",") {
		name, sum, ok := strings.Cut(pair, ":")
		if b, err := hex.DecodeString(sum); !ok || name == "" || err != nil || len(b) != 32 {
			return nil, fmt.Errorf("this build's built-in plugin list has %q, not NAME:SHA256 (rebuild with make build)", pair)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("this build's built-in plugin list names %s twice (rebuild with make build)", name)
		}
		out[name] = strings.ToLower(sum)
	}
	return out, nil
}

// Host is AMID opened: close it when done. Only one process at a time opens the store;
// another is told that AMID is already running.
type Host struct {
	Paths      config.Paths
	Store      *store.Store
	Catalog    *catalog.Catalog
	Supervisor supervisor.Options
	// Executor is where new runs train (the settings'); ExecutorOverride, when it sets
	// fields, replaces them for this session of any run, one that resumes included.
	Executor, ExecutorOverride config.Executor
}

// Open opens the store of the data folder s names and the plugin catalog over its plugin
// folders; the plugins log to log (nil: standard error) at error level and compute on the
// device s names (AMID_DEVICE in their environment).
func Open(s config.Settings, log io.Writer) (*Host, error) {
	p, err := s.Paths()
	if err != nil {
		return nil, err
	}
	devEnv, err := s.DeviceEnv()
	if err != nil {
		return nil, err
	}
	if err := s.Executor.Validate(); err != nil {
		return nil, err
	}
	sums, err := BuiltinSums()
	if err != nil {
		return nil, err
	}
	st, err := store.Open(p.Store, store.DefaultTimeout)
	if err != nil {
		return nil, err
	}
	sup := SupervisorOptions(log)
	sup.Env = append(sup.Env, devEnv...)
	return &Host{
		Paths:      p,
		Store:      st,
		Catalog:    &catalog.Catalog{Builtin: p.BuiltinPlugins, User: p.UserPlugins, Store: st, BuiltinSums: sums},
		Supervisor: sup,
		Executor:   s.Executor,
	}, nil
}

// Env is what a run needs from the host: its executor is the one the run recorded, or
// the settings' for a new run (NewExecutor).
func (h *Host) Env() run.Env {
	settings, override := h.Executor, h.ExecutorOverride
	return run.Env{Catalog: h.Catalog, Supervisor: h.Supervisor,
		NewExecutor: func(dir string, local *run.Local) (run.Executor, error) {
			return NewExecutor(dir, settings, override, local)
		}}
}

// Close closes the store.
func (h *Host) Close() error { return h.Store.Close() }

// SupervisorOptions are the options plugins start with: their log, at error level, goes to
// w (nil: standard error). A package re-run (amid reproduce) needs them without a store.
func SupervisorOptions(w io.Writer) supervisor.Options {
	return supervisor.Options{Logger: hclog.New(&hclog.LoggerOptions{Name: "amid", Level: hclog.Error, Output: w})}
}
