//go:build linux

package supervisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"amid/assets/fileio"
	"amid/assets/measure"
	"amid/host/catalog"
	"amid/host/store"
	"amid/plugins/protocol"
)

// benchEntry installs the example plugin as a trusted catalog entry (no store needed).
func benchEntry(b *testing.B) (*catalog.Entry, Options) {
	b.Helper()
	sum, err := fileio.SHA256(echoBin)
	if err != nil {
		b.Fatal(err)
	}
	e := &catalog.Entry{Name: "echo", Path: echoBin, SHA256: sum, State: catalog.Trusted, Record: &store.Plugin{TrustedSHA256: sum}}
	return e, Options{Logger: hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Off})}
}

// cpu is CPU time (user + system) of this process, of its waited-for children, and of a
// running plugin (from /proc; 0 when pid is 0). The machine is shared, so wall time per op
// varies with load; CPU time per op does much less.
func cpu(pid int) (self, children, plugin time.Duration) {
	self = measure.CPU()
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	children = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	if pid > 0 {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
			var ut, st int64
			fmt.Sscan(f[11], &ut) // utime, field 14 of proc(5), in clock ticks (USER_HZ = 100)
			fmt.Sscan(f[12], &st) // stime, field 15
			plugin = time.Duration(ut+st) * 10 * time.Millisecond
		}
	}
	return
}

// reportCPU reports host and plugin CPU per operation since (s0, c0, p0).
func reportCPU(b *testing.B, pid int, s0, c0, p0 time.Duration) {
	s1, c1, p1 := cpu(pid)
	n := float64(b.N)
	b.ReportMetric(float64((s1-s0).Microseconds())/n, "host-cpu-us/op")
	b.ReportMetric(float64((c1-c0+p1-p0).Microseconds())/n, "plugin-cpu-us/op")
}

// BenchmarkStart measures a plugin start (checksum, exec, handshake, mutual TLS) up to
// the answer to its first call. Goal: under 50 ms.
func BenchmarkStart(b *testing.B) {
	e, opts := benchEntry(b)
	ctx := context.Background()
	s0, c0, _ := cpu(0)
	for b.Loop() {
		p, err := Start(ctx, e, opts)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.plug.Describe(ctx, &protocol.DescribeRequest{}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		p.Kill()
		b.StartTimer()
	}
	reportCPU(b, 0, s0, c0, 0)
}

// BenchmarkChecksum is the share of a start spent on go-plugin's SecureConfig check: the
// sha256 of the whole plugin binary, read the way Start has it read (fileHash) and, for
// comparison, with go-plugin's default io.Copy into a plain sha256.
func BenchmarkChecksum(b *testing.B) {
	fi, err := os.Stat(echoBin)
	if err != nil {
		b.Fatal(err)
	}
	sum, err := fileio.SHA256(echoBin)
	if err != nil {
		b.Fatal(err)
	}
	want, _ := hex.DecodeString(sum)
	for _, c := range []struct {
		name string
		hash func() hash.Hash
	}{{"start", func() hash.Hash { return newFileHash() }}, {"io.Copy", sha256.New}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(fi.Size())
			for b.Loop() {
				ok, err := (&plugin.SecureConfig{Checksum: want, Hash: c.hash()}).Check(echoBin)
				if err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		})
	}
}

// BenchmarkRoundTrip measures one small unary call to a running plugin. Goal: under 1 ms.
func BenchmarkRoundTrip(b *testing.B) {
	e, opts := benchEntry(b)
	ctx := context.Background()
	p, err := Start(ctx, e, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Kill()
	req := &protocol.PlanRequest{Fingerprint: []byte(`{"cases":2}`), Task: protocol.Task{Kind: "segmentation", Dims: 3}}
	s0, c0, p0 := cpu(p.Pid())
	for b.Loop() {
		if _, err := p.plug.Plan(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, p.Pid(), s0, c0, p0)
}

// BenchmarkProgress10k streams 10,000 progress events per operation from a plugin that
// does nothing else, each validated by the host, and reports the cost per event and that
// cost as a share of a 50 ms training step (the tiny CPU network's step time in
// shared/reference/go-stack.md, "Engine"). Goal: under 1 %.
func BenchmarkProgress10k(b *testing.B) {
	e, opts := benchEntry(b)
	ctx := context.Background()
	p, err := Start(ctx, e, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Kill()
	dir := b.TempDir()
	img := filepath.Join(dir, "img.raw")
	if err := os.WriteFile(img, []byte{1, 2, 3, 4}, 0o644); err != nil {
		b.Fatal(err)
	}
	const events = 10000
	s0, c0, p0 := cpu(p.Pid())
	req := &protocol.TrainRequest{
		Config:  []byte(`{"steps":10000,"step_ms":0,"checkpoint_every":1000000}`),
		Train:   []protocol.Case{{ID: "x", Images: []string{img}}},
		WorkDir: dir,
	}
	for b.Loop() {
		var n int
		var prev int64
		_, err := p.plug.Train(ctx, req, func(pr *protocol.Progress) error {
			n++
			if err := pr.Validate(prev); err != nil {
				return err
			}
			prev = pr.Step
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		if n != events {
			b.Fatalf("%d events, want %d", n, events)
		}
	}
	s1, c1, p1 := cpu(p.Pid())
	perEvent := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / events
	cpuPerEvent := float64((s1 - s0 + c1 - c0 + p1 - p0).Nanoseconds()) / float64(b.N) / events
	b.ReportMetric(perEvent, "ns/event")
	b.ReportMetric(cpuPerEvent, "cpu-ns/event")
	b.ReportMetric(cpuPerEvent/50e6*100, "%-of-50ms-step")
}
