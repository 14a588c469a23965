package engine

import (
	"fmt"

	"amid/plugins/engine/vk"
)

// Planning to a device's memory needs the memory a network will hold there before it is
// built there (on a machine that may lack the device, or Vulkan altogether). A sizer is a
// Vulkan backend whose device only counts: a network built on it runs every layer's
// device initialisation, and a Trainer made for it every allocation, by the same block
// rules as a real device's (vk.NewSizer), but nothing is allocated, uploaded or recorded,
// and parameters are not initialised. The count is therefore the engine's own code
// path, not a second model of it that could drift.

// NewSizer returns a backend that sizes networks for the device info describes (see
// [TrainingBytes]). Its networks cannot run.
func NewSizer(info vk.Info) *Vulkan { return &Vulkan{CPU: NewCPU(1), dev: vk.NewSizer(info)} }

// Sizing says whether the backend only sizes networks ([NewSizer]).
func (v *Vulkan) Sizing() bool { return v.dev.Sizing() }

// TrainingBytes is the device memory at its peak of training a network on the device
// info describes: build builds the network and its optimizer on the backend it is given
// (a sizer), and the network, the optimizer's state, a [Trainer]'s staging and read-back
// buffers and the transfers' staging are counted as the device would hold them, block
// rounding included. Pipelines (per device, shared by every network on it, a few MiB)
// are not counted. TestTrainingBytesMatchesDriver compares it with what the driver
// reports.
func TrainingBytes(info vk.Info, o TrainOptions, build func(be Backend) (*Net, Optimizer, error)) (int64, error) {
	v := NewSizer(info)
	net, opt, err := build(v)
	if err != nil {
		return 0, fmt.Errorf("engine: sizing a network: %w", err)
	}
	tr, err := NewTrainer(net, opt, o)
	if err != nil {
		return 0, fmt.Errorf("engine: sizing a trainer: %w", err)
	}
	_, peak := v.dev.Held()
	tr.Close()
	net.Free()
	return peak, nil
}
