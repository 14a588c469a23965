// Package data prepares training cases for the engine: intensity normalisation by
// modality, resampling to a target spacing, random patch sampling with foreground
// oversampling, seeded augmentation, and a [Loader] that fills batches on background
// goroutines into preallocated buffers.
//
// Layout: a [Case] holds its image as C planes of X·Y·Z float32 values (X fastest), the
// engine's NC(D)HW order for one sample, and its label map as int32 class indices 0..K-1
// (what engine.Loss.SetLabels takes). Batches concatenate samples in the same order.
//
// Determinism: batch k is drawn with its own PCG generator seeded by (Seed, k), so a seed
// reproduces every batch exactly whatever the number of workers or their timing.
package data
