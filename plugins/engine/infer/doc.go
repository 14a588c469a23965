// Package infer runs a trained network over whole images: sliding-window prediction with
// Gaussian importance weighting and optional flip test-time augmentation, argmax, mapping
// class indices back to the task's label values on the input's grid, and connected-
// component post-processing of label maps.
//
// Layout as in the engine: an image is C planes of X·Y·Z float32 values (X fastest), the
// network's output K planes of class scores; label maps are X·Y·Z int32 class indices.
//
// Memory: the windows run with z outermost, so their float64 sums are held for a band of
// the patch's Z planes only, and each slice is divided and handed on ([WindowTo], [Sink])
// as soon as no later window covers it; the sums of the weights are made one plane at a
// time, in the order the outputs were added, so every value is bit for bit what
// whole-image sums give. Per voxel and class of an image of Z planes the sums take
// 8·Patch[2]/Z bytes (1.7 for a CT of 300 planes and 64³ windows) where they took 12 (8
// for the float64 sums and 4 for the result, and 8 bytes per voxel for the weights').
// [Window] and [Segment] return the K float32 planes, 4 bytes per voxel and class more;
// [Classes], the segmentation plugin's path, keeps only the class map (4 bytes per voxel)
// unless the image is resampled. On a CT of 512×512×300 with 7 classes and a cheap
// function in place of the network, the whole process peaked at 8.07 GiB before
// (Segment, Argmax, Confidence), 4.28 GiB now with the same calls and 1.77 GiB with
// Classes, the labels and confidence the same byte for byte (README.md).
package infer
