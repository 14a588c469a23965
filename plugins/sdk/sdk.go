// Package sdk is what a task-plugin author imports: Serve runs an implementation of
// protocol.Plugin as an AMID plugin process, and a few helpers write checkpoints the way
// the host checks them.
//
// A plugin's main function is one line:
//
//	func main() { sdk.Serve(&myPlugin{}) }
//
// Nothing may write to stdout before Serve: stdout carries go-plugin's handshake. Log with
// Logger (it writes to stderr, and the host tags each line with the plugin's name).
package sdk

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"amid/assets/fileio"
	"amid/plugins/compute"
	"amid/plugins/protocol"
)

// Serve serves impl as an AMID task plugin and returns when the host tells the process to
// exit. Run by hand (without the host), it prints a short explanation and exits with status 1.
//
// The connection is mutual TLS with credentials the host makes for this start and passes
// in the environment (see protocol.ServerTLS); a host that offers only go-plugin's
// automatic mutual TLS gets that instead.
//
// A Train result or a Predict response that names no compute identity gets the one the
// plugin's Describe reports: a process computes with one engine, device, kernel set and
// worker split (a plugin that chooses per call sets its own).
func Serve(impl protocol.Plugin) {
	var tlsErr error
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: protocol.Handshake,
		Plugins:         protocol.PluginSet(identified{impl}),
		GRPCServer:      plugin.DefaultGRPCServer,
		// The host's per-start credentials: the plugin's certificate, and the host's as
		// the only client accepted. Without them Serve refuses to serve in plain text.
		TLSProvider: func() (*tls.Config, error) {
			c, err := protocol.ServerTLS()
			tlsErr = err
			return c, err
		},
		Logger: Logger(),
	})
	if tlsErr != nil {
		// go-plugin has logged it (the host shows the line); the host sees the exit.
		os.Exit(1)
	}
}

// Logger returns a logger that writes JSON lines to stderr, which the host re-logs at the
// same level under the plugin's name.
func Logger() hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Output: os.Stderr, JSONFormat: true, Level: hclog.Debug})
}

// FileSHA256 returns the lower-case hex sha256 of the file at path, as the protocol
// carries it (amid/assets/fileio's SHA256).
func FileSHA256(path string) (string, error) { return fileio.SHA256(path) }

// WriteFile writes data to path atomically and durably (amid/assets/fileio's Write: a
// temporary file in the same folder, synced, renamed, the folder synced), so a crash never
// leaves a half-written checkpoint under its final name. It returns the data's hex sha256.
func WriteFile(path string, data []byte) (string, error) {
	if err := fileio.Write(path, data); err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// Result builds the final training result for the checkpoint at path, hashing the file.
func Result(path string, steps int64, validation map[string]float64) (*protocol.TrainResult, error) {
	sum, err := FileSHA256(path)
	if err != nil {
		return nil, fmt.Errorf("final checkpoint: %w", err)
	}
	return &protocol.TrainResult{Checkpoint: path, SHA256: sum, Steps: steps, Validation: validation}, nil
}

// Clock measures a training run's time limit (protocol.TrainRequest.TimeLimit) from the
// moment the plugin received the request.
type Clock struct {
	start time.Time
	limit time.Duration
}

// NewClock starts the clock of req.
func NewClock(req *protocol.TrainRequest) *Clock {
	return &Clock{start: time.Now(), limit: req.TimeLimit}
}

// Expired reports whether the time limit has elapsed; without a limit it never does.
// A training loop checks it once per step and, when it is true, stops stepping and
// finishes as if the last step had been reached.
func (c *Clock) Expired() bool { return c.limit > 0 && time.Since(c.start) >= c.limit }

// Elapsed is the time since the request arrived.
func (c *Clock) Elapsed() time.Duration { return time.Since(c.start) }

// identified fills in a result's compute identity from Describe when the plugin left it
// out.
type identified struct{ protocol.Plugin }

func (p identified) identity(ctx context.Context) compute.Identity {
	d, err := p.Describe(ctx, &protocol.DescribeRequest{})
	if err != nil || d == nil {
		return compute.Identity{}
	}
	return d.Compute
}

func (p identified) Train(ctx context.Context, req *protocol.TrainRequest, report func(*protocol.Progress) error) (*protocol.TrainResult, error) {
	r, err := p.Plugin.Train(ctx, req, report)
	if err == nil && r != nil && r.Compute.IsZero() {
		r.Compute = p.identity(ctx)
	}
	return r, err
}

func (p identified) Predict(ctx context.Context, req *protocol.PredictRequest) (*protocol.PredictResponse, error) {
	r, err := p.Plugin.Predict(ctx, req)
	if err == nil && r != nil && r.Compute.IsZero() {
		r.Compute = p.identity(ctx)
	}
	return r, err
}
