// Package engine is AMID's own training engine: convolutional layers with hand-written
// forward and backward passes on flat float32 buffers in NC(D)HW layout, losses,
// optimizers and nnU-Net style U-Nets in 2D and 3D, on the CPU or on a GPU through Vulkan.
//
// A network is described layer by layer with a [Builder] and built once for a batch and
// patch shape ([Builder.Build]); every buffer is allocated then. The backend given to the
// builder decides where it runs:
//
//   - [CPU]: host buffers ([Tensor.Data], [Tensor.Grad]); matrix products through
//     OpenBLAS SGEMM (cgo), or a pure-Go SGEMM with CGO_ENABLED=0 or the tag "purego";
//     parallel loops on a fixed pool of goroutines. A training step allocates nothing.
//   - [Vulkan]: device buffers. Tensors own device memory (a tensor of a channel
//     concatenation is a view into its root's, as on the CPU); parameters, gradients and
//     optimizer state live in arenas on the device; each layer has a Vulkan
//     implementation of its forward and backward pass beside the CPU one (compute shaders
//     in package shaders, compiled to SPIR-V by `make generate`): convolutions as implicit
//     GEMM, reductions in a fixed order and without float atomics, so a device repeats its
//     results bit for bit. Host memory is kept only for what the caller fills (inputs,
//     loss targets) and what it reads back.
//
// The old seam, [Backend]'s Sgemm and Parallel over host slices, could not host a GPU:
// data must stay on the device, and a step must not cross to the host between layers. So a
// step is driven through two types that work on either backend:
//
//   - [Trainer]: forward, loss, backward, gradient clipping and the optimizer's update.
//     On the CPU it calls Forward, Backward, [ClipGradNorm] and the optimizer's Step, as
//     the plugins' loops do. On a device the whole step is recorded once into a command
//     buffer after Build and replayed every step, as CUDA graphs are; the learning rate and
//     the optimizer's bias corrections travel with the batch in a small block of step
//     values, so nothing is recorded again. Only the batch goes up and the loss and
//     gradient norm come back; uploads go through two staging buffers, so the next batch
//     is copied (and submitted) while the current step runs ([Trainer.Submit],
//     [Trainer.Wait]).
//   - [Predictor]: the forward pass and the outputs read back; and for sliding windows
//     [Windows] (package infer's NetWindow), which keeps the image on the device.
//
// Checkpoints stay device-independent: [Trainer.ToHost] copies parameters, batch norm
// statistics and optimizer state into their host slices, the format package ckpt saves,
// and a network built on another backend loads them (a model trained on a GPU predicts on
// the CPU and the other way round, within package compute's tolerances). Failures of a
// device are named errors ([ErrNoLoader], [ErrNoDevice], [ErrDriverTooOld],
// [ErrOutOfDeviceMemory], [ErrDeviceLost]) on which a caller falls back to the CPU,
// re-plans smaller or resumes from a checkpoint. [OpenDevice] and [ChooseDevice] read a
// device setting (auto, cpu, vulkan, vulkan:N). [TrainingBytes] counts the device memory
// of training a network before it is built there, through a sizer ([NewSizer]) that runs
// the same initialisation without allocating, so that plans fit the device.
//
// OpenBLAS 0.3.21 misdetects some CPUs (an AVX-512 Xeon as "Prescott", a 5× loss). Plugin
// processes call [EnsureCoreType] first thing in main: it compares OpenBLAS's core with the
// CPU's own feature flags and, when OpenBLAS chose a weaker core, re-executes the process
// with OPENBLAS_CORETYPE set (the variable is read only when the library loads).
package engine
