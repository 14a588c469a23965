// Package metrics computes the official metrics of the ReX-MLE challenges in pure Go, on
// flat data, spacing-aware, exactly as the ReX-MLE graders compute them.
//
// It lives under plugins/ because both sides use it: the host's graders and evaluation
// (amid/host/grade, amid/host/evaluate) score predictions from their own files with it, and
// the plugins report their own validation figures with the same code (plugins may not
// import host/).
//
// Every function takes plain slices: a binary mask is a []uint8 (non-zero is foreground), a
// label map is a slice of any integer type, and a 3D grid is described by dims [3]int in the
// order (X, Y, Z) with X varying fastest, the layout of amid/viewer/volume. Spacing is a
// [3]float64 in millimetres along X, Y, Z. Nothing here reads files or depends on cgo.
//
// # Two halves
//
// The 2D half (instance*.go, hungarian*.go, points*.go, coco*.go, stats*.go, image*.go)
// covers the cell and nuclei tasks, COCO detection, image quality and the statistics
// (balanced accuracy, correlations) that several graders share.
//
// clinical*.go are the metrics clinical papers judge a classification by, each as
// scikit-learn computes it (testdata/clinical_ref.py writes the reference the tests compare
// with, to 1e-12): AUROC (binary, macro one-vs-rest, mean over the findings of a
// multi-label task; ties count one half), sensitivity and specificity at a threshold chosen
// by Youden's J or for a target sensitivity, macro F1, Cohen's kappa with quadratic weights,
// the Brier score and the expected calibration error (10 equal-width bins of the top-label
// confidence); Bootstrap gives a 95 % percentile interval over cases (1000 resamples, a fixed
// seed) of any of them. ParseClinical reads their names in a task's metric. A metric with no
// value on its cases (an AUROC without positives) returns its reason instead, never 0.5 or
// NaN.
//
// The volumetric half covers the 3D segmentation and detection tasks:
//
//   - overlap*.go: Dice with each grader's empty-mask rule, per-label counts (the
//     class-average Dice over GT labels or GT ∪ prediction labels is MeanDice), micro Dice, the ISLES'22
//     lesion-wise F1, lesion-count and volume differences, mean and median aggregation.
//   - components*.go: 3D connected components with 6, 18 or 26 connectivity (run-based
//     union-find, numbered in raster order like scipy.ndimage.label and skimage.measure.label).
//   - edt*.go: the exact Euclidean distance transform with anisotropic spacing
//     (Felzenszwalb–Huttenlocher lower envelopes, linear time, parallel over lines).
//   - surface*.go: surface distances in the two conventions the graders use. The DeepMind
//     surface-distance convention (PANTHER) places surface elements on the corners between
//     voxels, weights each by its marching-cubes area and gives HD95, average distances and
//     surface Dice at a tolerance. The MONAI convention (SEG.A, TopBrain, TopCoW) takes
//     border voxels as mask XOR its 6-neighbour erosion and measures directed voxel-centre
//     distances from the prediction's border to the ground truth's.
//   - skeleton*.go and topology*.go: Lee94 3D thinning identical to skimage's
//     skeletonize_3d, clDice, Betti-0 errors, the TopBrain invalid-neighbour error, side-road
//     and group-2 detection F1 and the simplified TopCoW topology match of the ReX graders.
//   - box3d*.go: 3D box IoU as the ReX-MLE TopCoW grader computes it (boxes dilated
//     outward) and as the official TopCoW code does (inward shells), both exact in closed form.
//
// # One definition, the grader's rule as a parameter
//
// rules.go holds the conventions in which graders differ (DiceRule: which labels a case's
// mean Dice averages and what a case without labels scores; PointsRule: the points
// matching distance and averaging) with the single MeanDice and PointsF1 that take them.
// Graders, the host's validation, the plugins' validation and the desktop's Review screen all
// call these with the rule of the task's grader (DiceRuleOf, PointsRuleOf of
// taskspec.Spec.Challenge); amid/plugins/metrics/metricstest holds the cases each of them is
// tested on, with the numbers worked out by hand.
//
// Where a ReX-MLE grader departs from the official challenge code (SEG.A distances in voxels,
// TopCoW boxes dilated outward, HD95 taken in one direction only), both are offered under
// distinct names and the documentation of each function says which grader uses it.
package metrics
