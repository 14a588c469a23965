// Command amid-plugin-faulty is a task plugin that misbehaves on purpose, for the host's
// fault tests. The environment variable AMID_FAULT chooses how:
//
//	exit          Train exits the process with status 3 after three progress events
//	kill          Train sends itself SIGKILL after three progress events
//	crash-once    like exit, unless resuming from a checkpoint (then it trains normally)
//	hang          Train sends nothing and never returns, ignoring cancellation
//	hang-describe Describe never returns
//	ignore-cancel Train keeps sending progress after a cancel
//	stdout        writes to stdout before the go-plugin handshake
//	print         prints to stdout and stderr during Train (harmless after the handshake)
//	bad-describe  Describe claims protocol version 99
//	bad-plan      Plan returns a configuration that breaks the schema
//	bad-sha       Train's final result carries the wrong sha256
//	no-file       Train's final result names a file that does not exist
//	error         Train returns an error after two progress events
//	legacy-tls    serves the way an SDK before the host's credentials did: go-plugin's
//	              automatic mutual TLS (works, slower)
//	plaintext     serves without TLS, ignoring every credential the host offers
//	wrong-tls     serves with a certificate of its own instead of the one the host made
//	no-tls        starts with no credentials in its environment (the SDK refuses to serve)
//
// With AMID_FAULT unset it behaves: ten quick steps, a checkpoint every two.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-plugin"

	"amid/plugins/protocol"
	"amid/plugins/sdk"
)

var fault = os.Getenv("AMID_FAULT")

func main() {
	switch fault {
	case "stdout":
		fmt.Println("hello from a plugin that does not know the rules")
	case "legacy-tls", "plaintext":
		if fault == "plaintext" {
			os.Unsetenv("PLUGIN_CLIENT_CERT")
		}
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig: protocol.Handshake,
			Plugins:         protocol.PluginSet(faulty{}),
			GRPCServer:      plugin.DefaultGRPCServer,
			Logger:          sdk.Logger(),
		})
		return
	case "wrong-tls":
		// Credentials made here: a certificate and key the host has never seen, and the
		// host's certificate as the client it accepts.
		c, err := protocol.NewCredentials()
		if err != nil {
			panic(err)
		}
		for _, kv := range c.Env {
			if k, v, _ := strings.Cut(kv, "="); k == protocol.EnvTLSCert || k == protocol.EnvTLSKey {
				os.Setenv(k, v)
			}
		}
	case "no-tls":
		for _, k := range []string{protocol.EnvTLSCert, protocol.EnvTLSKey, protocol.EnvTLSClientCert, "PLUGIN_CLIENT_CERT"} {
			os.Unsetenv(k)
		}
	}
	sdk.Serve(faulty{})
}

type faulty struct{}

func (faulty) Describe(ctx context.Context, _ *protocol.DescribeRequest) (*protocol.DescribeResponse, error) {
	if fault == "hang-describe" {
		select {}
	}
	v := protocol.Version
	if fault == "bad-describe" {
		v = 99
	}
	return &protocol.DescribeResponse{
		Name: "faulty", Version: "0.0.1", ProtocolVersion: v,
		Tasks:        []protocol.TaskKind{{Kind: "segmentation", Dims: []int{2}}},
		Metrics:      []string{"dice"},
		ConfigSchema: []byte(`{"type":"object","properties":{"steps":{"type":"integer","minimum":1}},"required":["steps"]}`),
		Hardware:     []string{"cpu"},
	}, nil
}

func (faulty) Plan(context.Context, *protocol.PlanRequest) (*protocol.PlanResponse, error) {
	cfg := `{"steps":10}`
	if fault == "bad-plan" {
		cfg = `{"steps":"many"}`
	}
	return &protocol.PlanResponse{Candidates: []protocol.Candidate{{Name: "default", Config: []byte(cfg)}}}, nil
}

func (faulty) Train(ctx context.Context, req *protocol.TrainRequest, report func(*protocol.Progress) error) (*protocol.TrainResult, error) {
	if fault == "hang" {
		select {}
	}
	start := int64(0)
	if req.ResumeFrom != "" {
		b, err := os.ReadFile(req.ResumeFrom)
		if err != nil {
			return nil, err
		}
		fmt.Sscanf(strings.TrimSpace(string(b)), "step %d", &start)
	}
	for step := start + 1; step <= 10; step++ {
		if fault != "ignore-cancel" {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		time.Sleep(20 * time.Millisecond)
		p := &protocol.Progress{Step: step, TotalSteps: 10, Losses: map[string]float64{"l1": 1 / float64(step)}}
		if step%2 == 0 {
			p.Checkpoint = filepath.Join(req.WorkDir, fmt.Sprintf("step-%d.txt", step))
			if _, err := sdk.WriteFile(p.Checkpoint, fmt.Appendf(nil, "step %d\n", step)); err != nil {
				return nil, err
			}
		}
		if fault == "print" {
			fmt.Println("stdout line at step", step)
			fmt.Fprintln(os.Stderr, "stderr line at step", step)
		}
		if err := report(p); err != nil && fault != "ignore-cancel" {
			return nil, err
		}
		if step == start+3 {
			switch {
			case fault == "exit", fault == "crash-once" && req.ResumeFrom == "":
				os.Exit(3)
			case fault == "kill":
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
		}
		if step == 2 && fault == "error" {
			return nil, fmt.Errorf("out of memory at step 2")
		}
		if fault == "ignore-cancel" && ctx.Err() != nil {
			step-- // keep going forever
		}
	}
	final := filepath.Join(req.WorkDir, "final.txt")
	sum, err := sdk.WriteFile(final, []byte("final\n"))
	if err != nil {
		return nil, err
	}
	switch fault {
	case "bad-sha":
		sum = strings.Repeat("0", 64)
	case "no-file":
		final = filepath.Join(req.WorkDir, "missing.txt")
	}
	return &protocol.TrainResult{Checkpoint: final, SHA256: sum, Steps: 10}, nil
}

func (faulty) Predict(_ context.Context, req *protocol.PredictRequest) (*protocol.PredictResponse, error) {
	out := &protocol.PredictResponse{}
	for _, c := range req.Cases {
		p := filepath.Join(req.OutputDir, c.ID+".txt")
		if _, err := sdk.WriteFile(p, []byte(c.ID)); err != nil {
			return nil, err
		}
		out.Predictions = append(out.Predictions, protocol.Prediction{CaseID: c.ID, Files: []string{p}})
	}
	return out, nil
}
