// Package nifti reads NIfTI-1 and NIfTI-2 images (.nii, and .nii.gz recognised by the
// gzip magic, not by the name) into amid/viewer/volume and writes NIfTI-1.
//
// # Reading
//
// Read, Decode and their header-only forms ReadHeader and DecodeHeader accept single
// files of either version in either byte order (told apart by sizeof_hdr: 348 or 540,
// possibly byte-swapped). Header keeps every raw field for inspection.
//
// Element types: uint8, int8, int16, uint16, int32, uint32, float32 and float64 keep
// their type; RGB24 and RGBA32 become uint8 with 3 or 4 channels. int64 and uint64 are
// refused (ErrDType) rather than narrowed: no volume type holds them losslessly. Complex,
// float128 and binary data are refused too.
//
// Dimensions: x, y, z are the grid; time (dim[4]) and vector (dim[5]) become channels,
// channels fastest, so channel c of a voxel is component k of time point t of vector
// element u with c = (u·T + t)·K + k (K = 3 or 4 for RGB, else 1). The reader moves the
// data into that order as it reads, one slice at a time. A dimension above the fifth
// that is longer than 1 is refused (ErrFormat); CIFTI files are refused with that
// reason named.
//
// Geometry follows nibabel's get_best_affine: the sform when sform_code is a code
// nibabel knows (1–5), else the qform when qform_code is (quaternion, pixdim and qfac
// = pixdim[0], any qfac other than -1 counting as 1), else the base affine built from
// pixdim (x flipped, centred on the grid). Like nibabel, negative pixdim counts as its
// absolute value and a zero pixdim on an axis one voxel long as 1; zero, NaN or infinite
// pixdim on a longer axis, when the qform or base affine needs it, is an ErrGeometry, as
// is a non-finite or singular affine. The affine is converted from RAS to LPS by negating
// its first two rows and set with volume.Volume.SetAffine. The qform is computed in
// float64, where nibabel uses float32; they agree to 1e-6 of the affine's scale.
//
// Scaling: when scl_slope is finite and non-zero and not (1, 0), values are
// slope·raw + inter computed in float64 and stored as float32 (float64 when the stored
// type is float64), the values of nibabel's get_fdata; otherwise the native type is kept
// (nibabel's dataobj). RGB data are never scaled.
//
// # Bad input
//
// Every error names the file and wraps one of volume's shared errors: ErrTruncated for a
// file that ends inside the header or the data (for a plain file whose size is known
// this is found before anything is allocated), or whose vox_offset lies beyond its end;
// ErrFormat for a wrong sizeof_hdr or magic (.hdr/.img pairs, magic "ni1"/"ni2", are
// not supported), a vox_offset inside the header, a corrupt gzip stream or checksum, a
// valid slope with a non-finite intercept; ErrTooLarge from volume.CheckSize, called
// before allocating; ErrGeometry as above. A vox_offset of 0 means the data follow the
// header and its 4 extension bytes. Extensions are skipped, bytes after the data ignored
// and bitpix is not checked against the datatype. The reader inflates exactly the bytes
// the header announces and no more; when the gzip stream ends there, its checksum is
// verified. FuzzDecode checks that no input makes it panic.
//
// # Writing
//
// Write stores a NIfTI-1 file, gzip-compressed when the name ends in ".nii.gz" and plain
// for ".nii"; Encode writes the uncompressed bytes. The header is little-endian with
// vox_offset 352, scl_slope 1, xyzt_units mm, the volume's element type (uint8 with 3
// channels is written as 3 uint8 time points, not RGB24) and channels as dim[4]. Both
// transforms are set from the LPS geometry turned to RAS: the sform (sform_code 2,
// aligned) holds Direction·diag(Spacing) and Origin exactly as far as float32 allows,
// and the qform (qform_code 1, scanner) holds the rotation as a quaternion with qfac
// -1 for a left-handed grid (only an approximation for a sheared grid). Readers that
// follow nibabel or ITK use the sform. A round trip therefore keeps values exactly and
// geometry to float32 precision (relative 6e-8 per stored number; tested to 1e-6).
// NIfTI-1 limits each dimension to 32767 (ErrTooLarge above).
//
// # Speed and memory
//
// Without scaling or channels the reader inflates straight into the bytes of the
// final typed slice (viewed with unsafe.Slice) and swaps big-endian data in place; with
// them it goes through a one-slice scratch buffer. Reading allocates about 1.02–1.03×
// the decoded volume in all (TestMemory checks ≤ 1.3×).
//
// BenchmarkRead reads generated 256³ .nii.gz files (int16 CT-like, 32 MiB decoded, 15.8
// MB on disk; float32 MR-like, 64 MiB decoded, 18.9 MB) with this reader over the
// standard library's compress/gzip and over github.com/klauspost/compress/gzip, and with
// gonii. Best of 3 on a 2-core AMD EPYC shared with other builds (load average about 17,
// so wall times are inflated several-fold; CPU time is the steadier figure):
//
//	                      int16: wall  CPU    allocated      float32: wall  CPU    allocated
//	plain .nii (no gzip)        57 ms   16 ms  33.6 MB     18x       122 ms   24 ms  67.2 MB    19x
//	stdlib gzip               1861 ms  474 ms  36.0 MB  19787x      1769 ms  386 ms  67.7 MB  5243x
//	klauspost gzip (kept)     1070 ms  322 ms  33.7 MB    842x       607 ms  248 ms  67.2 MB   311x
//	gonii Parse               1321 ms  372 ms 130.9 MB    916x       620 ms  266 ms 255.6 MB   421x
//	gonii Parse+GetVoxels     4638 ms 1289 ms 265.1 MB    918x      4008 ms 1355 ms 389.8 MB   421x
//
// klauspost/compress is kept: it needs a third less CPU (322 against 474 ms, 248
// against 386 ms) and 20 times fewer allocations than the standard library, which
// allocates its Huffman link tables anew for every deflate block; it is already a
// dependency of the module. Inflating is the floor: the same images uncompressed take
// 16 and 24 ms of CPU, a twentieth of the gzip time.
//
// github.com/okieraised/gonii v0.9.0 was evaluated on the same files and the real ones
// (TestGoniiComparison, TestGoniiBadInput) and is not used. Its Parse is no faster in CPU
// time (its parallel pgzip only helps wall time on idle cores) and allocates 3.9× (int16)
// or 3.8× (float32) the decoded volume where this reader allocates 1.0×: it reads the
// whole file and then the whole inflated stream into memory before copying the data
// into a third buffer, exposes typed values only as a float64 copy through GetVoxels,
// which is slow (1.3 s of CPU for either image), and on the 28 real files it agrees with
// nibabel on 23: it reads float64 data as garbage (ascm_out_test, test_piesno), returns
// the zero sform as the affine of qform-only files (int16, rgb24), and has no typed
// access to RGB or vector data. It also panics on a negative dim and allocates whatever
// size a header announces without checking it against the file.
package nifti
