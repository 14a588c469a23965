// Package slurm runs a run's lane-folds as Slurm jobs, the workload manager hospital and
// university clusters already run: a [Launcher] for amid/host/lanejob's executor, which
// follows each job through its folder on the shared filesystem.
//
// Each lane-fold is one batch job, `amid lane exec SPEC.json`, submitted with
//
//	sbatch --parsable --job-name=amid-<run>-<lane-fold> --nodes=1 --ntasks=1
//	       --cpus-per-task=<the place's workers> --mem=<what the plan needs>
//	       [--gres=gpu:1] [--time=<the lane's time limit and a margin>]
//	       [--partition=P] [--account=A] --no-requeue --output=<job folder>/slurm-%j.out
//
// AMID, not Slurm, requeues a lane whose job was lost (a node failure, a preemption), once,
// from its newest checkpoint (--no-requeue keeps Slurm from starting the same job again
// behind the host's back). The host asks how jobs stand with `squeue --json` (Slurm 21.08
// and later; `squeue -o` with explicit fields where it has no JSON), for a job Slurm no
// longer lists with `sacct` where the cluster keeps accounting, cancels with `scancel`, and
// never reads a table meant for people. A job writes its own end into the run folder, so a
// host that was away learns how its jobs ended however long Slurm remembers them
// (MinJobAge).
//
// The run folder, the data and the AMID program (with its plugins) must lie on a
// filesystem the nodes share, at the same paths.
package slurm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"amid/host/lanejob"
	"amid/host/run"
)

// Defaults of the Options.
const (
	DefaultJobs   = 4
	DefaultCPUs   = 4
	DefaultMemory = 4 << 30
	// MemoryOverhead is what a job needs besides the plan's estimate of a training step:
	// the lane exec and the plugin's runtime, and the cases it holds.
	MemoryOverhead = 1 << 30
	// GPUDevice is the device of a GPU place: the first (only) GPU Slurm gives the job.
	GPUDevice = "vulkan:0"
)

// Options say how lane-folds become Slurm jobs.
type Options struct {
	// Partition and Account, when set, are sbatch's --partition and --account.
	Partition, Account string
	// Jobs is how many lane-folds train at once on CPUs, each a job of CPUs cores (the
	// worker split, part of a result's compute identity); GPUs how many more train at once
	// on a GPU each (--gres=gpu:1). Defaults DefaultJobs, DefaultCPUs, 0.
	Jobs, CPUs, GPUs int
	// Memory is the least a job asks for, in bytes; a job asks for twice the plan's
	// estimate of a training step and MemoryOverhead when that is more. Default
	// DefaultMemory.
	Memory int64
	// Margin is added to a lane's time limit for its job's (starting, loading, the final
	// checkpoint); default 5 minutes and a tenth of the limit.
	Margin time.Duration
	// Program is the AMID program the jobs run; default: the amid next to this program.
	Program string
	// Args are more sbatch options for the site (--qos=..., --constraint=...).
	Args []string
	// Env is added to the environment of the Slurm commands, and so of the jobs (sbatch
	// passes its environment on).
	Env []string
	// Poll bounds how often squeue is run: its answer serves every job for that long
	// (default 2 s).
	Poll time.Duration
}

// Launcher submits lane execs as Slurm jobs and tells how they stand.
type Launcher struct {
	o Options

	mu      sync.Mutex
	snap    map[string]job // by job id, from the last squeue
	snapAt  time.Time
	json    bool  // squeue speaks JSON
	noAcct  bool  // sacct said the cluster keeps no accounting
	lastErr error // the last squeue's error, returned while it is fresh
	// downs is why its node was down, by lost job.
	downs map[string]string
}

// New checks that Slurm's commands are at hand and returns a launcher.
func New(o Options) (*Launcher, error) {
	if o.Jobs <= 0 && o.GPUs <= 0 {
		o.Jobs = DefaultJobs
	}
	if o.CPUs <= 0 {
		o.CPUs = DefaultCPUs
	}
	if o.Memory <= 0 {
		o.Memory = DefaultMemory
	}
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	for _, c := range []string{"sbatch", "squeue", "scancel"} {
		if _, err := exec.LookPath(c); err != nil {
			return nil, fmt.Errorf("the Slurm executor needs Slurm's %s on the PATH (Debian: apt-get install slurm-client): %w", c, err)
		}
	}
	if o.Program == "" {
		p, err := lanejob.Program()
		if err != nil {
			return nil, err
		}
		o.Program = p
	}
	if !filepath.IsAbs(o.Program) {
		return nil, fmt.Errorf("the AMID program the jobs run, %q, is not an absolute path", o.Program)
	}
	return &Launcher{o: o, json: true}, nil
}

// Kind implements lanejob.Launcher.
func (l *Launcher) Kind() string { return "Slurm job" }

// Places implements lanejob.Launcher: Jobs CPU places and GPUs GPU places, each with
// CPUs workers.
func (l *Launcher) Places() []run.Place {
	var out []run.Place
	for i := range l.o.Jobs {
		out = append(out, run.Place{Name: fmt.Sprintf("slurm%d", i), Device: "cpu", Workers: l.o.CPUs})
	}
	for i := range l.o.GPUs {
		out = append(out, run.Place{Name: fmt.Sprintf("slurm-gpu%d", i), Device: GPUDevice, Workers: l.o.CPUs})
	}
	return out
}

// gpu reports whether a place trains on a GPU.
func gpu(p run.Place) bool { return p.Device != "" && p.Device != "cpu" }

// Args are sbatch's arguments for j, its script last.
func (l *Launcher) Args(j *lanejob.Job, script string) []string {
	mem := max(l.o.Memory, 2*j.Memory+MemoryOverhead)
	args := []string{"--parsable", "--job-name=" + j.Name, "--nodes=1", "--ntasks=1",
		fmt.Sprintf("--cpus-per-task=%d", max(j.Place.Workers, 1)),
		fmt.Sprintf("--mem=%dM", (mem+(1<<20)-1)>>20),
		"--no-requeue", "--output=" + filepath.Join(j.Dir, "slurm-%j.out"), "--chdir=" + j.Dir}
	if gpu(j.Place) {
		args = append(args, "--gres=gpu:1")
	}
	if j.Limit > 0 {
		margin := l.o.Margin
		if margin <= 0 {
			margin = 5*time.Minute + j.Limit/10
		}
		args = append(args, fmt.Sprintf("--time=%d", int((j.Limit+margin+time.Minute-1)/time.Minute)))
	}
	if l.o.Partition != "" {
		args = append(args, "--partition="+l.o.Partition)
	}
	if l.o.Account != "" {
		args = append(args, "--account="+l.o.Account)
	}
	return append(append(args, l.o.Args...), script)
}

// Script is the batch script of j: the lane exec of its spec, told its job id.
func (l *Launcher) Script(j *lanejob.Job) string {
	return fmt.Sprintf("#!/bin/sh\n# AMID lane-fold %s: trains through amid lane exec and writes its events into this folder.\n%s=\"$SLURM_JOB_ID\"\nexport %s\nexec %s lane exec %s\n",
		j.Name, lanejob.EnvJob, lanejob.EnvJob, quote(l.o.Program), quote(j.Spec))
}

// quote quotes s for the shell.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Submit implements lanejob.Launcher.
func (l *Launcher) Submit(ctx context.Context, j *lanejob.Job) (string, error) {
	script := filepath.Join(j.Dir, "job.sh")
	if err := os.WriteFile(script, []byte(l.Script(j)), 0o755); err != nil {
		return "", err
	}
	out, err := l.command(ctx, "sbatch", l.Args(j, script)...)
	if err != nil {
		return "", err
	}
	// --parsable prints "jobid" or "jobid;cluster".
	id, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		return "", fmt.Errorf("sbatch printed %q, not a job id", strings.TrimSpace(string(out)))
	}
	return id, nil
}

// command runs a Slurm command and returns its standard output; its error carries the
// command's own message.
func (l *Launcher) command(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), l.o.Env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(string(out))
		}
		msg = strings.TrimPrefix(msg, name+": ")
		if msg != "" {
			return out, fmt.Errorf("%s: %s (%w)", name, firstLine(msg), err)
		}
		return out, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// Cancel implements lanejob.Launcher: scancel sends the job SIGTERM (its lane exec stops
// the plugin at its last checkpoint), then SIGKILL after the cluster's KillWait. A job
// that has already ended is no error.
func (l *Launcher) Cancel(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := l.command(ctx, "scancel", ids...)
	if err != nil && (strings.Contains(err.Error(), "already completing or completed") || strings.Contains(err.Error(), "Invalid job id")) {
		return nil
	}
	return err
}

// State implements lanejob.Launcher: from squeue, which every job's state shares for
// Poll; for a job squeue no longer lists, from sacct where the cluster keeps accounting.
func (l *Launcher) State(ctx context.Context, id string) (lanejob.State, error) {
	jobs, err := l.queue(ctx)
	if err != nil {
		return lanejob.State{}, err
	}
	j, ok := jobs[id]
	if !ok {
		if j, ok, err = l.accounted(ctx, id); err != nil || !ok {
			return lanejob.State{Phase: lanejob.Unknown}, err
		}
	}
	st := j.state()
	if j.State == "NODE_FAIL" && j.Node != "" {
		// Why the node went down, as Slurm said when the job was first seen lost (the
		// reason goes when the node comes back).
		l.mu.Lock()
		why, seen := l.downs[id]
		l.mu.Unlock()
		if !seen {
			why = l.NodeReason(ctx, j.Node)
			l.mu.Lock()
			if l.downs == nil {
				l.downs = map[string]string{}
			}
			l.downs[id] = why
			l.mu.Unlock()
		}
		if why != "" {
			st.Reason += ": node " + j.Node + " " + why
		}
	}
	return st, nil
}

// queue is every job squeue lists, at most Poll old.
func (l *Launcher) queue(ctx context.Context) (map[string]job, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if time.Since(l.snapAt) < l.o.Poll {
		return l.snap, l.lastErr
	}
	l.snapAt = time.Now()
	var jobs map[string]job
	var err error
	if l.json {
		var out []byte
		if out, err = l.command(ctx, "squeue", "--json"); err == nil {
			jobs, err = parseSqueueJSON(out)
		} else if strings.Contains(err.Error(), "unrecognized option") {
			l.json = false // a Slurm before 21.08: explicit fields instead
		}
	}
	if !l.json {
		var out []byte
		if out, err = l.command(ctx, "squeue", "--noheader", "--all", "--states=all", "--format="+squeueFormat); err == nil {
			jobs, err = parseSqueueFields(out)
		}
	}
	if err != nil {
		l.lastErr = err
		return l.snap, err
	}
	l.snap, l.lastErr = jobs, nil
	return jobs, nil
}

// accounted is what sacct says of job id, when the cluster keeps accounting.
func (l *Launcher) accounted(ctx context.Context, id string) (job, bool, error) {
	l.mu.Lock()
	no := l.noAcct
	l.mu.Unlock()
	if no {
		return job{}, false, nil
	}
	if _, err := exec.LookPath("sacct"); err != nil {
		return job{}, false, nil
	}
	out, err := l.command(ctx, "sacct", "--noheader", "--parsable2", "--allocations", "--jobs="+id, "--format="+sacctFormat)
	if err != nil || bytes.Contains(out, []byte("accounting storage is disabled")) {
		if err == nil || strings.Contains(err.Error(), "accounting storage is disabled") || strings.Contains(err.Error(), "slurmdbd") {
			l.mu.Lock()
			l.noAcct = true
			l.mu.Unlock()
			return job{}, false, nil
		}
		return job{}, false, err
	}
	jobs, err := parseSacct(out)
	if err != nil {
		return job{}, false, err
	}
	j, ok := jobs[id]
	return j, ok, nil
}

// NodeReason is why Slurm took node down, as sinfo says it now ("" when it says nothing).
func (l *Launcher) NodeReason(ctx context.Context, node string) string {
	out, err := l.command(ctx, "sinfo", "--json")
	if err != nil {
		return ""
	}
	var doc struct {
		Nodes []struct {
			Name   string `json:"name"`
			Reason string `json:"reason"`
		} `json:"nodes"`
	}
	if json.Unmarshal(out, &doc) != nil {
		return ""
	}
	for _, n := range doc.Nodes {
		if n.Name == node {
			return n.Reason
		}
	}
	return ""
}
