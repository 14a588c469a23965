package vk_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"

	"amid/plugins/compute"
	"amid/plugins/engine/shaders"
	"amid/plugins/engine/vk"
	"amid/plugins/engine/vk/vktest"
)

func TestEnumerate(t *testing.T) {
	vktest.Device(t)
	in, err := vk.Open()
	if err != nil {
		t.Fatal(err)
	}
	devs := in.Devices()
	if len(devs) == 0 {
		t.Fatal("no devices listed though one opened")
	}
	for _, d := range devs {
		t.Logf("device %d: %s; subgroup %d, shared %d B, %d invocations, storage range %d MiB, timestamps %d bits (%.3g ns), budget %v, fp16 %v, coopmat KHR %v NV %v",
			d.Index, d, d.SubgroupSize, d.MaxSharedMemory, d.MaxInvocations, d.MaxStorageBufferRange>>20, d.TimestampBits,
			d.TimestampPeriod, d.MemoryBudget, d.Float16, d.CoopMatKHR, d.CoopMatNV)
		if d.Name == "" || len(d.Heaps) == 0 || d.MaxInvocations < 128 || d.MaxSharedMemory < 16384 {
			t.Errorf("device %d: implausible description %+v", d.Index, d)
		}
	}
	if _, err := in.Device(len(devs), vk.Options{}); !errors.Is(err, vk.ErrNoDevice) {
		t.Errorf("device %d of %d: %v, want ErrNoDevice", len(devs), len(devs), err)
	}
}

// lavapipe's subgroup is the LLVM vector width over 32 bits: pinning the width to 256 bits
// makes it 8 on every CPU.
func TestPinnedSubgroup(t *testing.T) {
	d := vktest.Device(t)
	if d.Info().Driver != "llvmpipe" {
		t.Skipf("not lavapipe: %s", d.Info().Name)
	}
	if got := d.Info().SubgroupSize; got != 8 {
		t.Errorf("lavapipe subgroup %d with LP_NATIVE_VECTOR_WIDTH=%s, want 8", got, vktest.VectorWidth)
	}
}

func floats(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func putFloats(b []byte, v []float32) {
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
}

func eltwise(t *testing.T, d *vk.Device) *vk.Pipeline {
	t.Helper()
	spv, err := shaders.SPIRV("eltwise")
	if err != nil {
		t.Fatal(err)
	}
	pl, err := d.Pipeline("eltwise", spv, 3, 12, 256)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

func f32(v float32) uint32 { return math.Float32bits(v) }

// An upload, two dependent dispatches and a read-back: the program places barriers only
// between commands that depend on each other.
func TestProgram(t *testing.T) {
	d := vktest.Device(t)
	pl := eltwise(t, d)
	const n = 1000
	up, err := d.AllocHost(3*4*n, false)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Free()
	down, err := d.AllocHost(4*n, true)
	if err != nil {
		t.Fatal(err)
	}
	defer down.Free()
	x, _ := d.Alloc(4 * n)
	y, _ := d.Alloc(4 * n)
	z, _ := d.Alloc(4 * n)
	defer x.Free()
	defer y.Free()
	defer z.Free()
	xs, ys := make([]float32, n), make([]float32, n)
	for i := range xs {
		xs[i], ys[i] = float32(i), float32(2*i)+0.5
	}
	putFloats(up.Host(), xs)
	putFloats(up.Host()[4*n:], ys)

	p, err := d.NewProgram()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	p.Copy(vk.W(x), vk.R(up), 4*n)
	p.Copy(vk.W(y), vk.Binding{Buf: up, Off: 4 * n}, 4*n)
	// z = 2x + y, then z = 0.5·x + z: the second reads z, so a barrier separates them.
	p.Dispatch(pl, [3]int{4, 1, 1}, []uint32{1, n, 0, n, 0, n, 0, n, f32(2), f32(1), 1, 0}, vk.R(x), vk.R(y), vk.W(z))
	p.Dispatch(pl, [3]int{4, 1, 1}, []uint32{1, n, 0, n, 0, n, 0, n, f32(0.5), 0, 0, 1}, vk.R(x), vk.R(x), vk.W(z))
	p.Copy(vk.W(down), vk.R(z), 4*n)
	if err := p.End(); err != nil {
		t.Fatal(err)
	}
	// The initial barrier, one after the uploads, one between the dispatches, one before
	// the read-back.
	if p.Barriers != 3 {
		t.Errorf("%d barriers, want 3", p.Barriers)
	}
	for range 2 { // a recorded program runs again unchanged
		clear(down.Host())
		if err := p.Run(); err != nil {
			t.Fatal(err)
		}
		got := floats(down.Host())
		for i := range n {
			if want := 2.5*xs[i] + ys[i]; got[i] != want {
				t.Fatalf("z[%d] = %v, want %v", i, got[i], want)
			}
		}
	}
}

// Independent dispatches (different outputs, shared inputs) need no barrier between them.
func TestNoBarrierBetweenIndependent(t *testing.T) {
	d := vktest.Device(t)
	pl := eltwise(t, d)
	x, _ := d.Alloc(1024)
	a, _ := d.Alloc(1024)
	b, _ := d.Alloc(1024)
	defer x.Free()
	defer a.Free()
	defer b.Free()
	p, err := d.NewProgram()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	p.Fill(vk.W(x), 0)
	push := []uint32{1, 256, 0, 256, 0, 256, 0, 256, f32(1), 0, 0, 0}
	p.Dispatch(pl, [3]int{1, 1, 1}, push, vk.R(x), vk.R(x), vk.W(a))
	p.Dispatch(pl, [3]int{1, 1, 1}, push, vk.R(x), vk.R(x), vk.W(b))
	if err := p.End(); err != nil {
		t.Fatal(err)
	}
	if p.Barriers != 1 || p.Dispatches != 2 {
		t.Errorf("%d barriers and %d dispatches, want 1 and 2", p.Barriers, p.Dispatches)
	}
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
}

func TestMemoryCap(t *testing.T) {
	vktest.Device(t)
	in, _ := vk.Open()
	d, err := in.Device(vktest.Index(in), vk.Options{MemoryCap: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a, err := d.Alloc(600 << 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Alloc(600 << 10); !errors.Is(err, vk.ErrOutOfDeviceMemory) {
		t.Fatalf("second 600 KiB under a 1 MiB cap: %v, want ErrOutOfDeviceMemory", err)
	}
	a.Free()
	b, err := d.Alloc(600 << 10)
	if err != nil {
		t.Fatalf("after freeing: %v", err)
	}
	b.Free()
	if held, used := d.Allocated(); held != 0 || used != 0 {
		t.Errorf("after freeing everything: %d bytes held, %d used", held, used)
	}
}

func TestDeviceLost(t *testing.T) {
	vktest.Device(t)
	in, _ := vk.Open()
	d, err := in.Device(vktest.Index(in), vk.Options{LoseAfter: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	x, _ := d.Alloc(256)
	p, err := d.NewProgram()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	p.Fill(vk.W(x), 0)
	if err := p.Run(); err != nil {
		t.Fatalf("first run: %v", err)
	}
	if err := p.Run(); !errors.Is(err, vk.ErrDeviceLost) {
		t.Fatalf("second run: %v, want ErrDeviceLost", err)
	}
	if _, err := d.Alloc(256); !errors.Is(err, vk.ErrDeviceLost) || !d.Lost() {
		t.Fatalf("allocation on a lost device: %v, want ErrDeviceLost", err)
	}
}

func TestFaultsFromEnv(t *testing.T) {
	t.Setenv(compute.EnvVulkanFaults, "mem-cap=4096, lost-after=3")
	o, err := vk.FaultsFromEnv()
	if err != nil || o.MemoryCap != 4096 || o.LoseAfter != 3 {
		t.Fatalf("%+v, %v", o, err)
	}
	for _, bad := range []string{"mem-cap", "lost-after=x", "speed=3", "mem-cap=-1"} {
		t.Setenv(compute.EnvVulkanFaults, bad)
		if _, err := vk.FaultsFromEnv(); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestTimestamps(t *testing.T) {
	d := vktest.Device(t)
	if d.Info().TimestampBits == 0 {
		t.Skip("no timestamps on the compute queue")
	}
	x, _ := d.Alloc(1 << 20)
	defer x.Free()
	p, err := d.NewProgram()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	p.Mark("fill")
	p.Fill(vk.W(x), 0)
	p.Mark("end")
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
	sp, err := p.Times()
	if err != nil || len(sp) != 1 || sp[0].Label != "fill" || sp[0].Nanos < 0 {
		t.Fatalf("%v, %v", sp, err)
	}
}

// A process whose loader cannot be opened gets ErrNoLoader: the test runs itself again
// with AMID_VK_LOADER naming a library that does not exist.
func TestNoLoader(t *testing.T) {
	if os.Getenv("AMID_VK_NOLOADER_CHILD") == "1" {
		_, err := vk.Open()
		if !errors.Is(err, vk.ErrNoLoader) {
			fmt.Printf("got %v\n", err)
			os.Exit(3)
		}
		fmt.Println(err)
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestNoLoader$")
	cmd.Env = append(os.Environ(), "AMID_VK_NOLOADER_CHILD=1", compute.EnvVulkanLoader+"=/nonexistent/libvulkan.so.1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(string(out), "cannot open the Vulkan loader /nonexistent/libvulkan.so.1") {
		t.Errorf("message %q", out)
	}
}

func TestUsable(t *testing.T) {
	old := vk.Info{Name: "old", APIVersion: 1 << 22, ComputeQueue: true}
	if err := old.Usable(); !errors.Is(err, vk.ErrDriverTooOld) {
		t.Errorf("Vulkan 1.0: %v", err)
	}
	noq := vk.Info{Name: "noq", APIVersion: vk.MinAPI, MaxInvocations: 1024, MaxSharedMemory: 32768}
	if err := noq.Usable(); !errors.Is(err, vk.ErrNoDevice) {
		t.Errorf("no compute queue: %v", err)
	}
	small := vk.Info{Name: "small", APIVersion: vk.MinAPI, ComputeQueue: true, MaxInvocations: 128, MaxSharedMemory: 32768}
	if err := small.Usable(); !errors.Is(err, vk.ErrNoDevice) {
		t.Errorf("128 invocations: %v", err)
	}
	ok := vk.Info{Name: "ok", APIVersion: vk.MinAPI, ComputeQueue: true, MaxInvocations: 256, MaxSharedMemory: 16384}
	if err := ok.Usable(); err != nil {
		t.Errorf("a usable device: %v", err)
	}
}
