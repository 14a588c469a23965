package lanejob

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"amid/host/run"
)

// Exit statuses of `amid lane exec`: how the lane-fold ended, for a launcher that knows
// only that.
const (
	ExitFinished  = 0
	ExitFailed    = 1
	ExitCancelled = 2
)

// ExitCode is the exit status of a lane exec that ended with end.
func ExitCode(end *End) int {
	switch {
	case end == nil:
		return ExitFailed
	case end.State == EndFinished:
		return ExitFinished
	case end.State == EndCancelled:
		return ExitCancelled
	}
	return ExitFailed
}

// Process is a [Launcher] that runs each lane-fold as a process of its own on this machine
// (`amid lane exec SPEC.json`), followed through its files exactly as a cluster job is. A
// job's id is its process id. The processes run in process groups of their own: a host
// killed outright leaves them training, and the next session re-attaches to them.
type Process struct {
	// Command is the program and the arguments before the spec's path; default:
	// `amid lane exec` with the amid [Program] finds.
	Command []string
	// Env is added to the processes' environment.
	Env []string
	// Slots are the places; default: amid/host/run.LocalPlaces of this machine.
	Slots []run.Place

	mu    sync.Mutex
	procs map[string]*proc
}

type proc struct {
	done      chan struct{}
	state     *os.ProcessState
	cancelled bool
}

// Kind implements Launcher.
func (p *Process) Kind() string { return "process" }

// Places implements Launcher.
func (p *Process) Places() []run.Place {
	if len(p.Slots) > 0 {
		return p.Slots
	}
	return run.LocalPlaces(runtime.NumCPU())
}

// Submit implements Launcher: it starts the process, its output going to
// output-<pid>.log in the job folder.
func (p *Process) Submit(_ context.Context, j *Job) (string, error) {
	argv := p.Command
	if len(argv) == 0 {
		exe, err := Program()
		if err != nil {
			return "", err
		}
		argv = []string{exe, "lane", "exec"}
	}
	cmd := exec.Command(argv[0], append(append([]string(nil), argv[1:]...), j.Spec)...)
	cmd.Dir = j.Dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, EnvJob+"=") { // the process's id is its pid
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, p.Env...)
	detach(cmd)
	out, err := os.CreateTemp(j.Dir, "output-*.log")
	if err != nil {
		return "", err
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		os.Remove(out.Name())
		return "", err
	}
	id := strconv.Itoa(cmd.Process.Pid)
	_ = os.Rename(out.Name(), filepath.Join(j.Dir, "output-"+id+".log"))
	pr := &proc{done: make(chan struct{})}
	p.mu.Lock()
	if p.procs == nil {
		p.procs = map[string]*proc{}
	}
	p.procs[id] = pr
	p.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		out.Close()
		p.mu.Lock()
		pr.state = cmd.ProcessState
		p.mu.Unlock()
		close(pr.done)
	}()
	return id, nil
}

// State implements Launcher. A process this launcher started is known exactly; one an
// earlier session started is running while a lane exec process of that id lives, and
// unknown afterwards (its end event says how it ended).
func (p *Process) State(_ context.Context, id string) (State, error) {
	p.mu.Lock()
	pr := p.procs[id]
	var ps *os.ProcessState
	cancelled := false
	if pr != nil {
		ps, cancelled = pr.state, pr.cancelled
	}
	p.mu.Unlock()
	if pr == nil {
		if laneExecAlive(id) {
			return State{Phase: Running}, nil
		}
		return State{Phase: Unknown}, nil
	}
	if ps == nil {
		return State{Phase: Running}, nil
	}
	st := State{Phase: Ended, Reason: ps.String()}
	switch {
	case ps.ExitCode() == ExitFinished:
		st.Outcome = Completed
	case cancelled:
		st.Outcome = Cancelled
	case ps.ExitCode() == ExitCancelled:
		st.Outcome, st.Reason = Cancelled, "stopped by a signal it was sent"
	case killed(ps):
		st.Outcome = Lost // killed outright: not the lane's doing
	default:
		st.Outcome = Failed
	}
	return st, nil
}

// laneExecAlive reports whether process id lives and is a lane exec (its command line
// names a spec.json), where /proc tells.
func laneExecAlive(id string) bool {
	pid, err := strconv.Atoi(id)
	if err != nil || pid <= 0 || !alive(pid) {
		return false
	}
	b, err := os.ReadFile(filepath.Join("/proc", id, "cmdline"))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) || runtime.GOOS != "linux"
	}
	return strings.Contains(string(b), SpecFile)
}

// Cancel implements Launcher: SIGTERM, which a lane exec takes as a cancel (its plugin
// stops at its last checkpoint).
func (p *Process) Cancel(_ context.Context, ids []string) error {
	var errs []error
	for _, id := range ids {
		pid, err := strconv.Atoi(id)
		if err != nil {
			errs = append(errs, fmt.Errorf("process %q: not a process id", id))
			continue
		}
		p.mu.Lock()
		if pr := p.procs[id]; pr != nil {
			pr.cancelled = true
		}
		p.mu.Unlock()
		if !laneExecAlive(id) {
			continue
		}
		if err := terminate(pid); err != nil {
			errs = append(errs, fmt.Errorf("process %d: %w", pid, err))
		}
	}
	return errors.Join(errs...)
}
