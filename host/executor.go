package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"amid/assets/fileio"
	"amid/host/config"
	"amid/host/lanejob"
	"amid/host/run"
	"amid/host/slurm"
)

// ExecutorFile, in a run folder, records where the run trains its lane-folds
// (config.Executor as JSON). The first session writes it, and every later one reads it:
// a run keeps its executor.
const ExecutorFile = "executor.json"

// NewExecutor is the executor of the run in dir: the one the run recorded, else the one
// the settings name for new runs (recorded now), with the fields override sets in place
// of either's; local is the run's local executor, which the others predict with.
func NewExecutor(dir string, settings, override config.Executor, local *run.Local) (run.Executor, error) {
	cfg := settings
	path := filepath.Join(dir, ExecutorFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		cfg = config.Executor{}
		if err := json.Unmarshal(b, &cfg); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	cfg = cfg.Merge(override)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Kind == "" {
		cfg.Kind = config.ExecutorLocal
	}
	rec, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := fileio.Write(path, append(rec, '\n')); err != nil {
		return nil, err
	}
	switch cfg.Kind {
	case config.ExecutorProcess:
		return &lanejob.Executor{Launcher: &lanejob.Process{}, Local: local, Dir: dir}, nil
	case config.ExecutorSlurm:
		l, err := slurm.New(slurm.Options{Partition: cfg.Partition, Account: cfg.Account, Jobs: cfg.Jobs, CPUs: cfg.CPUs, GPUs: cfg.GPUs})
		if err != nil {
			return nil, err
		}
		return &lanejob.Executor{Launcher: l, Local: local, Dir: dir}, nil
	}
	return local, nil
}
