#!/usr/bin/python3
"""Writes golden.json: what nibabel reads from each real NIfTI file in the cache.

Usage (from the module root):
    /usr/bin/python3 viewer/nifti/testdata/golden.py .cache/realdata

For each file it records, in the layout of amid/viewer/volume (dims X, Y, Z, C with the
time and vector dimensions and RGB components folded into channels C, channels fastest;
geometry in LPS): dims, the element type after scaling, the affine nibabel chooses
(get_best_affine) with its first two rows negated, the spacing (column norms), the sum,
min and max of the values (NaN left out, counted in "nan"), and the values at a few fixed
flat indices of the volume's data. Scaled files use nibabel's get_fdata (float64); the Go
reader returns float32 for them (float64 when the stored type is float64). Files nibabel
cannot read as a plain image (CIFTI) are listed with "error".
"""
import json
import os
import sys

import nibabel as nib
import numpy as np

FILES = [
    "root/usr/lib/python3/dist-packages/nibabel/tests/data/anatomical.nii",
    "root/usr/lib/python3/dist-packages/nibabel/tests/data/functional.nii",
    "root/usr/lib/python3/dist-packages/nibabel/tests/data/example4d.nii.gz",
    "root/usr/lib/python3/dist-packages/nibabel/tests/data/example_nifti2.nii.gz",
    "root/usr/lib/python3/dist-packages/nibabel/tests/data/standard.nii.gz",
    "root/usr/lib/python3/dist-packages/nibabel/tests/data/reoriented_anat_moved.nii",
    "root/usr/lib/python3/dist-packages/nibabel/tests/data/resampled_anat_moved.nii",
    "root/usr/lib/python3/dist-packages/nibabel/tests/data/row_major.dconn.nii",
    "root/usr/lib/python3/dist-packages/dipy/data/files/aniso_vox.nii.gz",
    "root/usr/lib/python3/dist-packages/dipy/data/files/ascm_out_test.nii.gz",
    "root/usr/lib/python3/dist-packages/dipy/data/files/S0_10slices.nii.gz",
    "root/usr/lib/python3/dist-packages/dipy/data/files/func_coef.nii.gz",
    "root/usr/lib/python3/dist-packages/dipy/data/files/func_discrete.nii.gz",
    "root/usr/lib/python3/dist-packages/dipy/data/files/small_101D.nii.gz",
    "root/usr/lib/python3/dist-packages/dipy/data/files/small_25.nii.gz",
    "root/usr/lib/python3/dist-packages/dipy/data/files/small_64D.nii",
    "root/usr/lib/python3/dist-packages/dipy/data/files/test_piesno.nii.gz",
    "root/usr/lib/python3/dist-packages/heudiconv/tests/data/sample_nifti.nii.gz",
    "gomod/github.com/okieraised/gonii@v0.9.0/test_data/int16.nii.gz",
    "gomod/github.com/okieraised/gonii@v0.9.0/test_data/nii2_LR.nii.gz",
    "gomod/github.com/okieraised/gonii@v0.9.0/test_data/nii2_RL.nii.gz",
    "gomod/github.com/okieraised/gonii@v0.9.0/test_data/nii2_mni.nii.gz",
    "gomod/github.com/okieraised/gonii@v0.9.0/test_data/rgb24.nii.gz",
    "gomod/github.com/okieraised/gonii@v0.9.0/test_data/tensor_rgb.nii.gz",
    "gomod/github.com/okieraised/gonii@v0.9.0/test_data/tensor_tr.nii.gz",
    "npm/ami.js-0.33.0/package/data/nifti/adi_slice.nii",
    "root/usr/share/doc/insighttoolkit5-examples/examples/Data/KmeansTest_T1UCharRaw.nii.gz",
    "root/usr/share/doc/insighttoolkit5-examples/examples/Data/KmeansTest_T1RawSkullStrip.nii.gz",
    "root/usr/share/doc/insighttoolkit5-examples/examples/Data/KmeansTest_T1KmeansPrelimSegmentation.nii.gz",
]

GO_DTYPE = {
    "uint8": "uint8", "int8": "int8", "uint16": "uint16", "int16": "int16",
    "uint32": "uint32", "int32": "int32", "float32": "float32", "float64": "float64",
}


def fnum(x):
    """A float for JSON: None for NaN (the Go test reads null as NaN)."""
    x = float(x)
    return None if np.isnan(x) else x


def raw_header(img, path):
    with nib.openers.ImageOpener(path) as f:
        return type(img.header).from_fileobj(f, check=False)


def one(cache, rel):
    path = os.path.join(cache, rel)
    try:
        img = nib.load(path)
        if not isinstance(img, (nib.Nifti1Image, nib.Nifti2Image)):
            raise TypeError(f"{type(img).__name__} is not a plain NIfTI image")
    except Exception as e:  # recorded: the Go reader must refuse the file too
        return {"file": rel, "error": f"{type(e).__name__}: {e}"}
    hdr = raw_header(img, path)
    code = int(hdr["datatype"])
    k = {128: 3, 2304: 4}.get(code, 1)
    slope, inter = img.dataobj.slope, img.dataobj.inter
    scaled = k == 1 and not (slope == 1 and inter == 0)
    if scaled:
        arr = img.get_fdata()  # float64
        dtype = "float64" if hdr.get_data_dtype() == np.float64 else "float32"
    else:
        arr = np.asanyarray(img.dataobj)
        if k > 1:
            arr = arr.view((np.uint8, k)) if arr.dtype.names else arr
            dtype = "uint8"
        else:
            dtype = GO_DTYPE[arr.dtype.newbyteorder("=").name]
    shape = list(img.shape) + [1] * (5 - len(img.shape))
    X, Y, Z, T, V = shape[:5]
    C = T * V * k
    a6 = np.asarray(arr).reshape(X, Y, Z, T, V, k)
    a4 = a6.transpose(0, 1, 2, 4, 3, 5).reshape(X, Y, Z, C)
    flat = a4.transpose(2, 1, 0, 3).ravel()  # the Go volume's data order
    n = flat.size
    f64 = flat.astype(np.float64)
    nan = int(np.isnan(f64).sum())
    idx = sorted({0, n // 7, n // 3, n // 2, (2 * n) // 3, n - 1, int(np.nanargmax(f64))})
    aff = np.array(img.affine, dtype=np.float64)
    aff[0:2, :] *= -1
    hd = {
        "version": 2 if isinstance(img, nib.Nifti2Image) else 1,
        "datatype": code,
        "dim": [int(d) for d in hdr["dim"]],
        "sform_code": int(hdr["sform_code"]),
        "qform_code": int(hdr["qform_code"]),
        "intent_code": int(hdr["intent_code"]),
        "xyzt_units": int(hdr["xyzt_units"]),
        "descrip": hdr["descrip"].item().decode("latin-1").split("\x00")[0],
        "vox_offset": float(hdr["vox_offset"]),
        "scl_slope": fnum(hdr["scl_slope"]),
        "scl_inter": fnum(hdr["scl_inter"]),
        "big_endian": hdr.endianness == ">",
    }
    return {
        "file": rel,
        "header": hd,
        "dims": [X, Y, Z, C],
        "dtype": dtype,
        "affine": [float(x) for x in aff.ravel()],
        "spacing": [float(x) for x in np.linalg.norm(aff[:3, :3], axis=0)],
        "sum": float(np.nansum(f64)),
        "min": float(np.nanmin(f64)),
        "max": float(np.nanmax(f64)),
        "nan": nan,
        "voxels": [[i, fnum(f64[i])] for i in idx],
    }


def main():
    cache = sys.argv[1]
    out = {
        "command": "/usr/bin/python3 viewer/nifti/testdata/golden.py .cache/realdata",
        "nibabel": nib.__version__,
        "numpy": np.__version__,
        "files": [one(cache, rel) for rel in FILES],
    }
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "golden.json"), "w") as f:
        json.dump(out, f, indent=1, allow_nan=False)
        f.write("\n")


if __name__ == "__main__":
    main()
