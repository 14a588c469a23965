package device_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"amid/plugins/compute"
	"amid/plugins/engine"
	"amid/plugins/engine/vk/vktest"
	"amid/plugins/internal/device"
	"amid/plugins/internal/device/devicetest"
	"amid/plugins/protocol"
)

func TestMain(m *testing.M) {
	vktest.Pin() // lavapipe's vector width, before any Vulkan instance exists
	os.Exit(m.Run())
}

// logged collects the sentences a Log gets.
type logged []string

func (l *logged) log(s string) { *l = append(*l, s) }

func TestSetting(t *testing.T) {
	t.Setenv(compute.EnvDevice, "")
	if s := device.Setting(); s != "auto" {
		t.Errorf("unset: %q, want auto", s)
	}
	t.Setenv(compute.EnvDevice, " vulkan:1 ")
	if s := device.Setting(); s != "vulkan:1" {
		t.Errorf("%q", s)
	}
}

// Open honours the setting, and where the device cannot be had it computes on the CPU
// and logs one sentence saying why.
func TestOpen(t *testing.T) {
	setting := devicetest.Setting(t)
	for _, tc := range []struct {
		setting string
		vulkan  bool
		log     string
	}{
		{"cpu", false, ""},
		{setting, true, ""},
		{"vulkan:99", false, "AMID_DEVICE=vulkan:99: no GPU to be had (engine: device setting \"vulkan:99\": there are"},
		{"gpu", false, "not a device setting"},
	} {
		t.Setenv(compute.EnvDevice, tc.setting)
		var l logged
		be := device.Open(1, l.log)
		if device.OnDevice(be) != tc.vulkan {
			t.Errorf("%s: %s", tc.setting, device.Name(be))
		}
		if tc.log == "" && len(l) > 0 || tc.log != "" && (len(l) != 1 || !strings.Contains(l[0], tc.log) || !strings.HasSuffix(l[0], "so the CPU computes")) {
			t.Errorf("%s: logged %q", tc.setting, l)
		}
	}
	// The device is opened once per process.
	t.Setenv(compute.EnvDevice, setting)
	a, b := device.Open(1, nil).(*engine.Vulkan), device.Open(1, nil).(*engine.Vulkan)
	if a.Device() != b.Device() {
		t.Error("the device was opened twice")
	}
}

// Describe lists the CPU and every Vulkan device, and names the identity of the device
// the setting chooses.
func TestDescribe(t *testing.T) {
	setting := devicetest.Setting(t)
	info, err := engine.ChooseDevice(setting)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(compute.EnvDevice, setting)
	hw, id := device.Describe(2)
	if hw[0] != "cpu" || !slices.ContainsFunc(hw, func(h string) bool { return strings.HasPrefix(h, fmt.Sprintf("vulkan:%d %s (", info.Index, info.Name)) }) {
		t.Errorf("hardware %q", hw)
	}
	if id != engine.VulkanIdentity(*info) {
		t.Errorf("identity %v", id)
	}
	t.Setenv(compute.EnvDevice, "cpu")
	if _, id := device.Describe(2); id != engine.CPUIdentity(2) {
		t.Errorf("cpu: identity %v", id)
	}
}

// Fit halves a batch until its training fits the device's budget (here 80 % of an
// injected cap), counting what the engine will hold; on the CPU it keeps the batch.
func TestFit(t *testing.T) {
	build := func(be engine.Backend, n int) (*engine.Net, engine.Optimizer, error) {
		u, err := engine.BuildUNet(be, engine.UNetConfig{In: 1, Classes: 2, Widths: []int{8, 16}, Convs: 2, Slope: 0.01}, n, [3]int{1, 128, 128}, 1)
		if err != nil {
			return nil, nil, err
		}
		return u.Net, engine.NewAdamW(be, u.Params(), 1e-3, 0), nil
	}
	t.Setenv(compute.EnvDevice, "cpu")
	if n, where, bytes, why := device.Fit(8, 12, build); n != 8 || where != "cpu" || bytes != 0 || why != "" {
		t.Errorf("cpu: batch %d on %q, %d bytes, %q", n, where, bytes, why)
	}
	devicetest.Use(t, "")
	n, where, full, _ := device.Fit(8, 12, build)
	if n != 8 || !strings.HasPrefix(where, "vulkan:") || full <= 0 {
		t.Fatalf("batch %d on %q, %d bytes", n, where, full)
	}
	cap := full * 3 / 4 // a budget of 60 % of batch 8's memory
	t.Setenv(compute.EnvVulkanFaults, fmt.Sprintf("mem-cap=%d", cap))
	n, _, bytes, why := device.Fit(8, 12, build)
	if budget := int64(device.BudgetFraction * float64(cap)); n >= 8 || bytes > budget || !strings.HasPrefix(why, fmt.Sprintf("batch %d to fit", n)) {
		t.Errorf("batch %d, %d bytes for a budget of %d: %q", n, bytes, budget, why)
	}
}

// Train re-plans a lane that does not fit once, fails the second time in one sentence,
// and continues a lane whose device is lost on the CPU from its newest checkpoint.
func TestTrain(t *testing.T) {
	devicetest.Use(t, "")
	shrink := func(n int) (int, string, bool) { return n / 2, fmt.Sprintf("batch %d → %d", n, n/2), n > 1 }
	var calls []string
	var l logged
	be, err := device.Train(1, l.log, 4, "", shrink, func(be engine.Backend, n int, resume string) (string, error) {
		calls = append(calls, fmt.Sprintf("%v batch %d from %q", device.OnDevice(be), n, resume))
		switch len(calls) {
		case 1:
			return "", fmt.Errorf("building: %w", engine.ErrOutOfDeviceMemory)
		case 2:
			return "epoch-0001.ckpt", fmt.Errorf("step 3: %w", engine.ErrDeviceLost)
		}
		return "final.ckpt", nil
	})
	want := []string{`true batch 4 from ""`, `true batch 2 from ""`, `false batch 2 from "epoch-0001.ckpt"`}
	if err != nil || device.OnDevice(be) || !slices.Equal(calls, want) {
		t.Errorf("calls %q, ended on %s with %v", calls, device.Name(be), err)
	}
	if len(l) != 2 || !strings.Contains(l[0], "re-planned smaller (batch 4 → 2)") || !strings.Contains(l[1], "goes on on the CPU from checkpoint epoch-0001.ckpt") {
		t.Errorf("logged %q", l)
	}
	// A network the device has no programs for (the real error of a layer without a
	// Vulkan implementation) trains on the CPU, from its start.
	calls, l = nil, nil
	be, err = device.Train(1, l.log, 4, "", shrink, func(be engine.Backend, n int, resume string) (string, error) {
		calls = append(calls, fmt.Sprintf("%v from %q", device.OnDevice(be), resume))
		if device.OnDevice(be) {
			return "", unsupported(t, be)
		}
		return "final.ckpt", nil
	})
	if want := []string{`true from ""`, `false from ""`}; err != nil || device.OnDevice(be) || !slices.Equal(calls, want) {
		t.Errorf("a network the device cannot run: calls %q, ended on %s with %v", calls, device.Name(be), err)
	}
	if len(l) != 1 || !strings.Contains(l[0], "cannot run this lane's network") || !strings.Contains(l[0], "goes on on the CPU from its start") {
		t.Errorf("a network the device cannot run: logged %q", l)
	}
	_, err = device.Train(1, nil, 4, "", shrink, func(engine.Backend, int, string) (string, error) {
		return "", fmt.Errorf("building: %w", engine.ErrOutOfDeviceMemory)
	})
	if !errors.Is(err, device.ErrNoFit) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "even re-planned smaller (batch 4 → 2)") {
		t.Errorf("twice out of memory: %v", err)
	}
}

// Progress holds back events behind the furthest step sent and sends the sentences logged
// with the next event.
func TestProgress(t *testing.T) {
	var sent []protocol.Progress
	p := device.NewProgress(func(e *protocol.Progress) error { sent = append(sent, *e); return nil })
	for _, s := range []int64{1, 2, 3} {
		if err := p.Send(&protocol.Progress{Step: s}); err != nil {
			t.Fatal(err)
		}
	}
	p.Log("the device was lost")
	for _, s := range []int64{2, 3, 4} { // going on from the step-1 checkpoint
		if err := p.Send(&protocol.Progress{Step: s, Message: fmt.Sprint("at ", s)}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, e := range sent {
		got = append(got, fmt.Sprintf("%d %s", e.Step, e.Message))
	}
	if want := []string{"1 ", "2 ", "3 ", "3 the device was lost; at 3", "4 at 4"}; !slices.Equal(got, want) {
		t.Errorf("sent %q, want %q", got, want)
	}
}

// unsupported builds on be a network with a layer the Vulkan device has no program for
// (nearest-neighbour upsampling, which the device U-Nets replace by transposed
// convolutions) and returns the build's error.
func unsupported(t *testing.T, be engine.Backend) error {
	t.Helper()
	b := engine.NewBuilder(be, 1)
	x := b.Input(engine.Shape{N: 1, C: 1, D: 1, H: 4, W: 4})
	b.Upsample(x, [3]int{1, 2, 2})
	n, err := b.Build()
	if err == nil {
		n.Free()
		t.Fatal("a network with upsampling built on the Vulkan device; the test needs a layer it cannot run")
	}
	if !errors.Is(err, engine.ErrNotOnDevice) {
		t.Fatalf("upsampling on the Vulkan device: %v, want engine.ErrNotOnDevice", err)
	}
	return err
}
