// Package engine is AMID's own training engine: convolutional layers with hand-written
// forward and backward passes on flat float32 buffers in NC(D)HW layout, losses,
// optimizers and nnU-Net style U-Nets in 2D and 3D.
//
// All buffers are sized once when a network is built for a batch and patch shape
// ([Builder.Build]); a training step then allocates nothing. Matrix products and parallel
// loops run on a [Backend]: the CPU backend calls OpenBLAS SGEMM through cgo, or a pure-Go
// SGEMM when built with CGO_ENABLED=0 or the tag "purego". A GPU backend can be added
// behind the same seam without touching the layers that use it.
//
// OpenBLAS 0.3.21 misdetects some CPUs (an AVX-512 Xeon as "Prescott", a 5× loss). Plugin
// processes call [EnsureCoreType] first thing in main: an OPENBLAS_CORETYPE the user set is
// kept; otherwise it compares OpenBLAS's core with the CPU's own feature flags and, when
// OpenBLAS chose a weaker core, re-executes the process with OPENBLAS_CORETYPE set (the
// variable is read only when the library loads).
//
// Which SGEMM kernels run decides the last bits of every result: a backend's
// [CPU.Identity] names them (amid/plugins/compute), so that a model package can say what
// computed it and a re-run elsewhere is judged by the right rule. [NewPortableCPU] runs the
// pure-Go SGEMM, whose bits are the same on every x86-64 CPU.
package engine
