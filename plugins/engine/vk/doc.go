// Package vk is the engine's thin layer over Vulkan compute: the loader is opened at run
// time (dlopen of libvulkan.so.1, as volk does; nothing links against -lvulkan), so a
// program built with it still starts, and falls back to the CPU, on a machine without
// Vulkan. It enumerates devices ([Open], [Instance.Devices]: type, name, driver, memory
// heaps with VK_EXT_memory_budget where the driver has it, subgroup size, limits), opens
// one compute queue per device ([Instance.Device]), suballocates device memory from large
// blocks ([Device.Alloc]), builds one pipeline per shader and specialization
// ([Device.Pipeline]), and records many dispatches into one command buffer in a single
// crossing into C ([Program]), with a memory barrier only where a command touches memory
// an earlier one wrote (or writes memory an earlier one read), and timestamps for
// profiling.
//
// Failures are named errors, wrapped with %w: [ErrNoLoader], [ErrNoDevice],
// [ErrDriverTooOld], [ErrOutOfDeviceMemory] and [ErrDeviceLost]. A software driver cannot
// run out of device memory or lose its device on demand, so [Options] (or the
// environment variable AMID_VK_FAULT, e.g. "mem-cap=1048576,lost-after=3") injects an
// allocation cap and a lost device for tests.
//
// Without cgo the package still builds; [Open] then reports ErrNoLoader.
package vk
