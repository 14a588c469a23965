// Package device is where the built-in plugins compute: the device setting the host
// passes them (compute.EnvDevice, AMID_DEVICE: auto, cpu, vulkan or vulkan:N), the backend
// it opens, what Describe reports about the machine's devices, the memory a lane may be
// planned for on the device, and what a lane does when its device fails.
//
//   - [Open] opens the setting's backend. Where the device cannot be had (no Vulkan loader,
//     no device, a driver too old, a device that fails to open) the plugin computes on the
//     CPU and says so in one sentence. The Vulkan device is opened once per process and
//     shared, so that its pipelines are compiled once.
//   - [Describe] lists the CPU and every Vulkan device for the protocol's hardware field,
//     and the compute identity of the device the setting chooses.
//   - [Budget] is the device memory a lane may be planned for, as nnU-Net plans to a VRAM
//     target; engine.TrainingBytes sizes a network for it without building it there.
//   - [Train] runs a lane and recovers from its device's failures: a lane that does not
//     fit the device's memory is re-planned smaller once, then fails with one sentence; a
//     lane whose device is lost goes on on the CPU from its last checkpoint. [Predict]
//     predicts on the device and, when the device fails, again on the CPU.
package device

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"

	"amid/plugins/compute"
	"amid/plugins/engine"
	"amid/plugins/engine/vk"
	"amid/plugins/sdk"
)

// Setting is this process's device setting: $AMID_DEVICE, "auto" when unset
// (compute.ReadSettings).
func Setting() string { return compute.ReadSettings().Device }

// Log takes one sentence about the device a plugin computes with (a fallback to the CPU, a
// re-plan, a lost device): the plugin's log and, while training, a progress message.
type Log func(sentence string)

// shared is the process's opened Vulkan devices by index.
var shared struct {
	sync.Mutex
	devs map[int]*vk.Device
}

// openVulkan returns the process's device index, opening it (with the faults AMID_VK_FAULT
// injects) on first use or again after it was lost.
func openVulkan(index int) (*vk.Device, error) {
	shared.Lock()
	defer shared.Unlock()
	if d := shared.devs[index]; d != nil && !d.Lost() {
		return d, nil
	} else if d != nil {
		d.Close()
		delete(shared.devs, index)
	}
	in, err := vk.Open()
	if err != nil {
		return nil, err
	}
	opt, err := vk.FaultsFromEnv()
	if err != nil {
		return nil, err
	}
	d, err := in.Device(index, opt)
	if err != nil {
		return nil, err
	}
	if shared.devs == nil {
		shared.devs = map[int]*vk.Device{}
	}
	shared.devs[index] = d
	return d, nil
}

// Open returns the backend of the device setting with workers host workers (0:
// GOMAXPROCS). Where the setting's device cannot be had, it returns the CPU and log gets
// one sentence saying why; a machine without a GPU under "auto" gets the CPU silently.
func Open(workers int, log Log) engine.Backend {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	setting := Setting()
	info, err := engine.ChooseDevice(setting)
	if info != nil {
		var d *vk.Device
		if d, err = openVulkan(info.Index); err == nil {
			return engine.NewVulkanOn(d, workers)
		}
	}
	if err != nil && log != nil {
		log(fmt.Sprintf("%s=%s: no GPU to be had (%v), so the CPU computes", compute.EnvDevice, setting, err))
	}
	return engine.NewCPU(workers)
}

// OnDevice says whether be computes on a Vulkan device.
func OnDevice(be engine.Backend) bool {
	_, ok := be.(*engine.Vulkan)
	return ok
}

// Name names be's device in a sentence: "the CPU", or the Vulkan device with its index.
func Name(be engine.Backend) string {
	if v, ok := be.(*engine.Vulkan); ok {
		return fmt.Sprintf("vulkan:%d (%s)", v.Info().Index, v.Info().Name)
	}
	return "the CPU"
}

// Describe returns the protocol's hardware list ("cpu", then every Vulkan device as
// "vulkan:N NAME (type, driver, Vulkan version, memory)", a device the engine cannot use
// with the reason) and the compute identity of the device the setting chooses, without
// opening it (the CPU's when it chooses none or cannot be honoured).
func Describe(workers int) (hardware []string, id compute.Identity) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	hardware = []string{"cpu"}
	devs, _ := engine.VulkanDevices()
	for _, d := range devs {
		h := fmt.Sprintf("vulkan:%d %s", d.Index, d)
		if err := d.Usable(); err != nil {
			h += fmt.Sprintf(" — unusable: %v", err)
		}
		hardware = append(hardware, h)
	}
	if info, err := engine.ChooseDevice(Setting()); info != nil && err == nil {
		return hardware, engine.VulkanIdentity(*info)
	}
	return hardware, engine.CPUIdentity(workers)
}

// Planned says which device the setting chooses, for a plan: the device's info, or nil
// for the CPU.
func Planned() *vk.Info {
	info, err := engine.ChooseDevice(Setting())
	if err != nil {
		return nil
	}
	return info
}

// BudgetFraction is the share of a device's memory one lane is planned for: the rest is
// left to the display, the driver and prediction (nnU-Net likewise plans to a VRAM target
// below the card's memory).
const BudgetFraction = 0.8

// Budget is the device memory a lane may be planned for on info's device: BudgetFraction
// of what the driver says this process may use (VK_EXT_memory_budget's budget of the
// device-local heaps) where it says, else of the device-local heaps' size, or of the
// memory cap AMID_VK_FAULT injects (a smaller device, for tests).
func Budget(info vk.Info) int64 {
	var size, budget uint64
	for _, h := range info.Heaps {
		if h.DeviceLocal {
			size += h.Size
			budget += h.Budget
		}
	}
	if info.MemoryBudget && budget > 0 {
		size = min(size, budget)
	}
	if f, err := vk.FaultsFromEnv(); err == nil && f.MemoryCap > 0 {
		size = min(size, uint64(f.MemoryCap))
	}
	return int64(BudgetFraction * float64(size))
}

// Where names a device for a lane's plan: "cpu", or "vulkan:N NAME".
func Where(info *vk.Info) string {
	if info == nil {
		return "cpu"
	}
	return fmt.Sprintf("vulkan:%d %s", info.Index, info.Name)
}

// ErrNoFit reports a lane that does not fit its device's memory even re-planned smaller.
var ErrNoFit = errors.New("does not fit the device's memory")

// ToLog is a Log that writes to the plugin's log at error level, which the host shows
// (it re-logs its plugins' lines at error level and above): the device the setting asked
// for was not used.
func ToLog(sentence string) { sdk.Logger().Error(sentence) }

// CloseAll closes the process's Vulkan devices; the next Open opens them again, with the
// faults AMID_VK_FAULT then injects (tests). Nothing opened on them may be used after.
func CloseAll() {
	shared.Lock()
	defer shared.Unlock()
	for i, d := range shared.devs {
		d.Close()
		delete(shared.devs, i)
	}
}

// Build builds a lane's network and optimizer on be for a batch of n (for sizing).
type Build func(be engine.Backend, n int) (*engine.Net, engine.Optimizer, error)

// Fit plans a lane's batch to the device the setting chooses. On a device it is the
// largest batch at most n, halving from n, whose training the engine counts within
// Budget (engine.TrainingBytes), with those bytes (1 and its bytes when even that is over:
// training then re-plans it smaller or fails); on the CPU n, with 0 bytes (the plugin has
// no estimate of the host's memory). where names the device planned for, why says what
// was decided in a few words.
func Fit(n int, clip float64, build Build) (batch int, where string, bytes int64, why string) {
	info := Planned()
	if info == nil {
		return n, Where(nil), 0, ""
	}
	budget := Budget(*info)
	size := func(n int) int64 {
		b, err := engine.TrainingBytes(*info, engine.TrainOptions{Clip: clip}, func(be engine.Backend) (*engine.Net, engine.Optimizer, error) {
			return build(be, n)
		})
		if err != nil {
			return math.MaxInt64
		}
		return b
	}
	batch, bytes = n, size(n)
	for bytes > budget && batch > 1 {
		batch /= 2
		bytes = size(batch)
	}
	why = fmt.Sprintf("about %d MiB on %s (of %d MiB planned to)", bytes>>20, Where(info), budget>>20)
	if batch < n {
		why = fmt.Sprintf("batch %d to fit the device's memory: ", batch) + why
	}
	return batch, Where(info), bytes, why
}
