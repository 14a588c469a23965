// Package supervisor starts trusted plugin processes and keeps the host safe from them.
//
// Every start checks the binary's sha256 against the trust recorded for it (go-plugin's
// SecureConfig hashes the file again just before exec), talks gRPC over mutual TLS with
// fresh Ed25519 credentials the host makes for each start (protocol.NewCredentials says
// how they reach the plugin, and the threat model), gives up on a handshake that takes
// longer than StartTimeout, tags the plugin's stderr with its name in the host log, puts
// the plugin in its own process group that dies with the host, and turns every failure
// into one sentence that names the plugin and says what happened.
//
// RunLane trains one lane: it records the lane and its events in the store, restarts a
// plugin that crashed (with backoff, resuming from its last checkpoint), stops a plugin that
// goes silent, stops a cancelled one within CancelGrace (killing it if it does not listen),
// and calls a lane finished only when the plugin's final message names a checkpoint whose
// file exists and whose sha256 matches.
package supervisor

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"amid/assets/fileio"
	"amid/host/catalog"
	"amid/plugins/protocol"
	"amid/plugins/protocol/schema"
)

// Options tunes the supervisor. Zero fields take the defaults shown.
type Options struct {
	Logger          hclog.Logger  // default: Info level on stderr
	StartTimeout    time.Duration // handshake deadline, default 10 s
	CallTimeout     time.Duration // Describe and Plan deadline, default 30 s
	ProgressTimeout time.Duration // longest silence during Train, default 10 min
	CancelGrace     time.Duration // time a cancelled Train has to stop, default 2 s
	Restarts        int           // restarts of a crashed lane, default 3; negative: none
	Backoff         time.Duration // first restart delay, doubled each time up to 30 s; default 500 ms
	// Env is added to the plugin's environment after the host's own, e.g. GOMAXPROCS to
	// fix a re-run's worker split.
	Env []string
	// Sent, when set, sees every training request (*protocol.TrainRequest, in RunLane)
	// and prediction request (*protocol.PredictRequest, in amid/host/predict) just before
	// a plugin process receives it: a test's window on what plugins are handed.
	Sent func(req any)
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = hclog.New(&hclog.LoggerOptions{Name: "amid", Level: hclog.Info})
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.StartTimeout, 10*time.Second)
	def(&o.CallTimeout, 30*time.Second)
	def(&o.ProgressTimeout, 10*time.Minute)
	def(&o.CancelGrace, 2*time.Second)
	def(&o.Backoff, 500*time.Millisecond)
	if o.Restarts == 0 {
		o.Restarts = 3
	} else if o.Restarts < 0 {
		o.Restarts = 0
	}
	return o
}

// Process is one running plugin. Its methods validate the plugin's answers and return
// errors that are one sentence naming the plugin.
type Process struct {
	Name   string
	SHA256 string
	opts   Options
	cmd    *exec.Cmd
	client *plugin.Client
	plug   protocol.Plugin
	schema *schema.Schema

	// sockDir holds the plugin's Unix socket; it is removed when the plugin is killed,
	// so a plugin that dies without cleaning up leaves nothing in the temp folder.
	sockDir string

	mu     sync.Mutex
	killed string // why the host killed it, if it did
}

// Start launches the plugin of a trusted catalog entry. It refuses an entry that is not
// trusted, and go-plugin refuses a binary whose sha256 no longer matches the trust.
func Start(_ context.Context, e *catalog.Entry, opts Options) (*Process, error) {
	opts = opts.withDefaults()
	if err := e.Usable(); err != nil {
		return nil, err
	}
	if e.Record == nil {
		return nil, fmt.Errorf("plugin %s has no trust record", e.Name)
	}
	sum, err := hex.DecodeString(e.Record.TrustedSHA256)
	if err != nil || len(sum) != sha256.Size {
		return nil, fmt.Errorf("plugin %s: the recorded trust %q is not a sha256", e.Name, e.Record.TrustedSHA256)
	}
	creds, err := protocol.NewCredentials()
	if err != nil {
		return nil, fmt.Errorf("plugin %s was not started: %w", e.Name, err)
	}
	sockDir, err := os.MkdirTemp("", "amid-plugin-")
	if err != nil {
		return nil, fmt.Errorf("plugin %s was not started: %w", e.Name, err)
	}
	cmd := exec.Command(e.Path)
	// The credentials come after the host's environment: the last value of a variable wins.
	cmd.Env = append(append(append(os.Environ(), opts.Env...), creds.Env...), plugin.EnvUnixSocketDir+"="+sockDir)
	isolate(cmd)
	log := opts.Logger.Named(e.Name)
	p := &Process{Name: e.Name, SHA256: e.Record.TrustedSHA256, opts: opts, cmd: cmd, sockDir: sockDir}
	p.client = plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  protocol.Handshake,
		Plugins:          protocol.PluginSet(nil),
		Cmd:              cmd,
		SkipHostEnv:      true, // cmd.Env has it, before the credentials
		SecureConfig:     &plugin.SecureConfig{Checksum: sum, Hash: newFileHash()},
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		TLSConfig:        creds.Config,
		StartTimeout:     opts.StartTimeout,
		Managed:          true,
		Logger:           log,
		SyncStdout:       &lineLogger{log: log, stream: "stdout"},
		SyncStderr:       &lineLogger{log: log, stream: "stderr"},
	})
	rpc, err := p.client.Client()
	if err != nil {
		p.kill("")
		return nil, p.explain("start", err)
	}
	// Ping completes the TLS handshake now, so that a plugin that fails it is refused at
	// start rather than at its first call.
	if err := rpc.Ping(); err != nil {
		killGroup(cmd) // no graceful stop for a plugin that failed the handshake
		p.kill("")
		return nil, p.explain("start", err)
	}
	if creds.Legacy() {
		log.Warn("plugin uses go-plugin's automatic mutual TLS (an older SDK), which makes each start slower; rebuild it against the current amid/plugins/sdk")
	}
	raw, err := rpc.Dispense(protocol.PluginName)
	if err != nil {
		p.kill("")
		return nil, p.explain("start", err)
	}
	p.plug = raw.(protocol.Plugin)
	return p, nil
}

// fileHash is the sha256 that go-plugin's SecureConfig computes over the plugin binary at
// every start. It reads the file in 256 KiB blocks: io.Copy's 32 KiB blocks spent a
// quarter of the check in read calls (measured on a 14 MB plugin).
type fileHash struct{ hash.Hash }

func newFileHash() fileHash { return fileHash{sha256.New()} }

// ReadFrom is what io.Copy(h, file) calls.
func (h fileHash) ReadFrom(r io.Reader) (int64, error) {
	buf := make([]byte, 256<<10)
	var n int64
	for {
		m, err := r.Read(buf)
		h.Write(buf[:m])
		n += int64(m)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// Pid is the plugin's process ID (0 before it started).
func (p *Process) Pid() int {
	if p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Exited reports whether the plugin process has ended.
func (p *Process) Exited() bool { return p.client.Exited() }

// Kill stops the plugin (gracefully for up to two seconds, then by force) and its process
// group.
func (p *Process) Kill() { p.kill("") }

func (p *Process) kill(why string) {
	p.mu.Lock()
	if why != "" && p.killed == "" {
		p.killed = why
	}
	p.mu.Unlock()
	if why != "" {
		// A hung or runaway plugin gets no graceful period.
		killGroup(p.cmd)
	}
	p.client.Kill()
	killGroup(p.cmd)
	os.RemoveAll(p.sockDir)
}

func (p *Process) killedFor() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.killed
}

// waitExit waits up to d for the process to end and returns its exit description.
func (p *Process) waitExit(d time.Duration) (string, bool) {
	deadline := time.Now().Add(d)
	for !p.client.Exited() {
		if time.Now().After(deadline) {
			return "", false
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Exited is set after cmd.Wait returned, so ProcessState is safe to read.
	if ps := p.cmd.ProcessState; ps != nil {
		return ps.String(), true
	}
	return "exited", true
}

// explain turns an error from a call into one sentence about the plugin.
func (p *Process) explain(op string, err error) error {
	if why := p.killedFor(); why != "" {
		return fmt.Errorf("plugin %s %s: %w", p.Name, why, err)
	}
	msg := err.Error()
	switch {
	case errors.Is(err, plugin.ErrChecksumsDoNotMatch):
		return fmt.Errorf("plugin %s was not started: its binary no longer matches the trusted sha256: %w", p.Name, err)
	case strings.Contains(msg, "Failed to read any lines from plugin's stdout"):
		// It ended (or closed stdout) before its handshake: say how, if it did end.
		if st, ok := p.waitExit(500 * time.Millisecond); ok {
			return fmt.Errorf("plugin %s exited during %s (%s) before its handshake: %w", p.Name, op, st, err)
		}
		return fmt.Errorf("plugin %s closed its stdout before its handshake: %w", p.Name, err)
	case strings.Contains(msg, "Unrecognized remote plugin message"):
		return fmt.Errorf("plugin %s wrote to stdout before its handshake (plugins must log to stderr): %w", p.Name, err)
	case strings.Contains(msg, "timeout while waiting for plugin to start"):
		return fmt.Errorf("plugin %s did not complete its handshake within %v: %w", p.Name, p.opts.StartTimeout, err)
	case strings.Contains(msg, "Incompatible API version"):
		return fmt.Errorf("plugin %s speaks another protocol version than the host's %d: %w", p.Name, protocol.Version, err)
	case strings.Contains(msg, "authentication handshake failed"), strings.Contains(msg, "tls: "):
		return fmt.Errorf("plugin %s failed the mutual TLS handshake (it did not use the credentials the host gave it; rebuild it against the current amid/plugins/sdk): %w", p.Name, err)
	case errors.Is(err, protocol.ErrMalformed):
		return fmt.Errorf("plugin %s sent a malformed answer to %s: %w", p.Name, op, err)
	}
	if st, ok := p.waitExit(500 * time.Millisecond); ok {
		return fmt.Errorf("plugin %s exited during %s (%s): %w", p.Name, op, st, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("plugin %s did not answer %s in time: %w", p.Name, op, err)
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("plugin %s: %s was cancelled: %w", p.Name, op, err)
	}
	if op == "start" {
		return fmt.Errorf("plugin %s could not be started: %w", p.Name, err)
	}
	return fmt.Errorf("plugin %s failed %s: %w", p.Name, op, err)
}

// unary runs a call under CallTimeout (unless ctx has an earlier deadline); a plugin that
// misses it is killed, since it may be hung.
func unary[T any](ctx context.Context, p *Process, op string, call func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.CallTimeout)
	defer cancel()
	r, err := call(ctx)
	if err != nil {
		var zero T
		if ctx.Err() == context.DeadlineExceeded || status.Code(err) == codes.DeadlineExceeded {
			// Decided here, not from the error's wording, which varies; and the plugin's
			// side of the deadline (sent as grpc-timeout) can end the call a moment before
			// this context's own timer fires, so the status code counts too.
			why := fmt.Sprintf("did not answer %s within its deadline and was stopped", op)
			p.kill(why)
			return zero, fmt.Errorf("plugin %s %s: %w", p.Name, why, err)
		}
		return zero, p.explain(op, err)
	}
	return r, nil
}

// Describe asks the plugin to describe itself and validates the answer (its name must match
// the catalog's).
func (p *Process) Describe(ctx context.Context) (*protocol.DescribeResponse, error) {
	d, err := unary(ctx, p, "Describe", func(ctx context.Context) (*protocol.DescribeResponse, error) {
		return p.plug.Describe(ctx, &protocol.DescribeRequest{})
	})
	if err != nil {
		return nil, err
	}
	s, err := schema.Describe(d)
	if err != nil {
		return nil, p.explain("Describe", err)
	}
	if d.Name != p.Name {
		return nil, p.explain("Describe", fmt.Errorf("%w: it calls itself %q", protocol.ErrMalformed, d.Name))
	}
	p.schema = s
	return d, nil
}

// Describe starts the plugin of a trusted catalog entry, asks it to describe itself and
// stops it: what trusting a plugin, showing its details and choosing plugins for a task
// need.
func Describe(ctx context.Context, e *catalog.Entry, opts Options) (*protocol.DescribeResponse, error) {
	p, err := Start(ctx, e, opts)
	if err != nil {
		return nil, err
	}
	defer p.Kill()
	return p.Describe(ctx)
}

// Plan asks for candidate configurations and checks each against the config schema.
func (p *Process) Plan(ctx context.Context, req *protocol.PlanRequest) (*protocol.PlanResponse, error) {
	if p.schema == nil {
		if _, err := p.Describe(ctx); err != nil {
			return nil, err
		}
	}
	r, err := unary(ctx, p, "Plan", func(ctx context.Context) (*protocol.PlanResponse, error) { return p.plug.Plan(ctx, req) })
	if err != nil {
		return nil, err
	}
	if err := r.Validate(p.schema); err != nil {
		return nil, p.explain("Plan", err)
	}
	return r, nil
}

// Predict asks for predictions and checks that every file it names exists. It has no
// deadline of its own: pass one in ctx.
func (p *Process) Predict(ctx context.Context, req *protocol.PredictRequest) (*protocol.PredictResponse, error) {
	r, err := p.plug.Predict(ctx, req)
	if err != nil {
		return nil, p.explain("Predict", err)
	}
	for _, pr := range r.Predictions {
		for _, f := range pr.Files {
			if !fileio.Within(req.OutputDir, f) {
				return nil, p.explain("Predict", fmt.Errorf("%w: case %s: file %s is outside the output folder", protocol.ErrMalformed, pr.CaseID, f))
			}
			if err := statFile(f); err != nil {
				return nil, p.explain("Predict", fmt.Errorf("%w: case %s: %w", protocol.ErrMalformed, pr.CaseID, err))
			}
		}
	}
	return r, nil
}

// lineLogger logs each line written to it.
type lineLogger struct {
	log    hclog.Logger
	stream string
	mu     sync.Mutex
	buf    bytes.Buffer
}

func (w *lineLogger) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(b)
	for {
		line, err := w.buf.ReadString('\n')
		if err == io.EOF {
			w.buf.WriteString(line) // keep the partial line
			return len(b), nil
		}
		w.log.Info(strings.TrimRight(line, "\r\n"), "stream", w.stream)
	}
}
