// Package infer runs a trained network over whole images: sliding-window prediction with
// Gaussian importance weighting and optional flip test-time augmentation, argmax, mapping
// class indices back to the task's label values on the input's grid, and connected-
// component post-processing of label maps.
//
// Layout as in the engine: an image is C planes of X·Y·Z float32 values (X fastest), the
// network's output K planes of class scores; label maps are X·Y·Z int32 class indices.
package infer
