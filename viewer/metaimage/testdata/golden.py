#!/usr/bin/python3
"""Expected values for the metaimage tests, from a MetaImage parser written here with numpy
and zlib (independent of the Go reader), and the small generated seed files the tests and
the fuzz target use.

Run from the repository root:
    /usr/bin/python3 viewer/metaimage/testdata/golden.py
It rewrites viewer/metaimage/testdata/gen_* and golden.json. The ITK example files come from
the real-data cache (.cache/realdata, see assets/realdata/SOURCES.md).

Geometry convention (ITK's MetaImageIO): TransformMatrix read in rows of NDims gives row i =
the direction of index axis i, so direction[:, i] = row i. The NRRD twins of the Direction
files (space directions) are parsed too, as a check from another format.
"""
import json
import os
import re
import sys
import zlib

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
HERE = os.path.join(ROOT, "viewer", "metaimage", "testdata")
ITK = os.path.join(ROOT, ".cache", "realdata", "root/usr/share/doc/insighttoolkit5-examples/examples/Data")
COMMAND = "/usr/bin/python3 viewer/metaimage/testdata/golden.py"

TYPES = {"MET_UCHAR": "u1", "MET_CHAR": "i1", "MET_USHORT": "u2", "MET_SHORT": "i2",
         "MET_UINT": "u4", "MET_INT": "i4", "MET_FLOAT": "f4", "MET_DOUBLE": "f8"}
GO = {"u1": "uint8", "i1": "int8", "u2": "uint16", "i2": "int16", "u4": "uint32",
      "i4": "int32", "f4": "float32", "f8": "float64"}


def parse(path):
    """Returns (array indexed [z, y, x, c], spacing, origin, direction 3x3, dtype code)."""
    blob = open(path, "rb").read()
    hdr, pos = {}, 0
    while True:
        end = blob.index(b"\n", pos)
        line = blob[pos:end].decode("ascii").strip()
        pos = end + 1
        if not line:
            continue
        k, v = [s.strip() for s in line.split("=", 1)]
        hdr[k] = v
        if k == "ElementDataFile":
            break
    nd = int(hdr["NDims"])
    size = [int(s) for s in hdr["DimSize"].split()]
    nc = int(hdr.get("ElementNumberOfChannels", "1"))
    code = TYPES[hdr["ElementType"]]
    msb = hdr.get("BinaryDataByteOrderMSB", hdr.get("ElementByteOrderMSB", "False")).lower() == "true"
    dt = np.dtype(code).newbyteorder(">" if msb else "<")
    count = int(np.prod(size)) * nc
    nbytes = count * dt.itemsize
    if hdr["ElementDataFile"] == "LOCAL":
        data = blob[pos:]
    else:
        data = open(os.path.join(os.path.dirname(path), hdr["ElementDataFile"]), "rb").read()
    hs = int(hdr.get("HeaderSize", "0"))
    if hs == -1:
        data = data[len(data) - nbytes:]
    elif hs > 0:
        data = (blob if hdr["ElementDataFile"] == "LOCAL" else data)[hs:]
    if hdr.get("CompressedData", "False").lower() == "true":
        if "CompressedDataSize" in hdr:
            data = data[:int(hdr["CompressedDataSize"])]
        data = zlib.decompressobj(47).decompress(data)
    a = np.frombuffer(data[:nbytes], dtype=dt).astype(dt.newbyteorder("="))
    # File order: x fastest, then y, z, t; channels innermost.
    shape = list(reversed(size)) + [nc]
    a = a.reshape(shape)
    if nd == 4:  # (t, z, y, x, c) -> (z, y, x, t*c)
        a = np.moveaxis(a, 0, 3).reshape(size[2], size[1], size[0], size[3] * nc)
    while a.ndim < 4:
        a = a[np.newaxis]
    n = min(nd, 3)
    sp = [float(s) for s in hdr.get("ElementSpacing", hdr.get("ElementSize", " ".join(["1"] * nd))).split()]
    org = [float(s) for s in next((hdr[k] for k in ("Offset", "Position", "Origin") if k in hdr), " ".join(["0"] * nd)).split()]
    tm = next((hdr[k] for k in ("TransformMatrix", "Rotation", "Orientation") if k in hdr), None)
    direction = np.eye(3)
    if tm is not None:
        m = np.array([float(s) for s in tm.split()]).reshape(nd, nd)
        for i in range(n):
            direction[:n, i] = m[i, :n]
    spacing = [1.0, 1.0, 1.0]
    origin = [0.0, 0.0, 0.0]
    spacing[:n] = sp[:n]
    origin[:n] = org[:n]
    return a, spacing, origin, direction, code


def nrrd_direction(path):
    """Direction (3x3) from a 2D NRRD header's space directions."""
    txt = open(path).read()
    vecs = re.findall(r"\(([^)]*)\)", re.search(r"space directions:(.*)", txt).group(1))
    d = np.eye(3)
    for j, v in enumerate(vecs):
        col = np.array([float(s) for s in v.split(",")])
        d[:len(col), j] = col / np.linalg.norm(col)
    return d


def record(path):
    a, sp, org, d, code = parse(path)
    z, y, x, c = a.shape
    pts = [(0, 0, 0, 0), (x // 2, y // 2, z // 2, 0), (x - 1, y - 1, z - 1, c - 1), (x // 3, y // 4, 0, c // 2)]
    flat = a.reshape(-1, c)
    am = int(np.argmax(a.astype(np.float64).sum(axis=3)))
    ax, ay, az = am % x, (am // x) % y, am // (x * y)
    pts.append((ax, ay, az, 0))
    return {
        "dims": [x, y, z, c],
        "dtype": GO[code],
        "spacing": sp,
        "origin": org,
        "direction": [float(v) for v in d.reshape(-1)],
        "sum": float(a.astype(np.float64).sum()),
        "min": float(a.min()),
        "max": float(a.max()),
        "voxels": [[int(p[0]), int(p[1]), int(p[2]), int(p[3]), float(a[p[2], p[1], p[0], p[3]])] for p in pts],
    }


def write(name, header, payload):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(header.encode("ascii") + payload)


def generate():
    rng = np.random.default_rng(20261130)
    th = np.deg2rad(20)
    # Direction columns: axis 0, 1, 2 unit vectors (a rotation about z then a flip of z).
    d = np.array([[np.cos(th), -np.sin(th), 0], [np.sin(th), np.cos(th), 0], [0, 0, -1.0]])
    tm = " ".join("%.17g" % v for v in d.T.reshape(-1))  # row i = axis i
    a = (rng.integers(-3000, 3000, size=(3, 4, 5))).astype(">i2")
    write("gen_short_msb.mha",
          "ObjectType = Image\nNDims = 3\nBinaryData = True\nElementByteOrderMSB = True\n"
          "TransformMatrix = %s\nOffset = -10.25 20.5 30\nElementSpacing = 0.5 0.75 2.5\n"
          "DimSize = 5 4 3\nElementType = MET_SHORT\nElementDataFile = LOCAL\n" % tm, a.tobytes())
    f = rng.normal(size=(3, 2, 3, 4)).astype("<f4")  # t, z, y, x
    z = zlib.compress(f.tobytes())
    write("gen_4d_float.mha",
          "ObjectType = Image\nNDims = 4\nBinaryData = True\nBinaryDataByteOrderMSB = False\n"
          "CompressedData = True\nCompressedDataSize = %d\nPosition = 1 2 3 0\nElementSize = 1.5 1.5 3 1\n"
          "DimSize = 4 3 2 3\nElementType = MET_FLOAT\nElementDataFile = LOCAL\n" % len(z), z)
    u = rng.integers(0, 2**32 - 1, size=(2, 3, 4), dtype=np.uint64).astype("<u4")
    with open(os.path.join(HERE, "gen_tail.raw"), "wb") as fh:
        fh.write(b"J" * 37 + u.tobytes())
    write("gen_tail.mhd",
          "ObjectType = Image\nNDims = 3\nHeaderSize = -1\nOrigin = 0.5 -0.5 7\n"
          "ElementSpacing = 1 1 1\nDimSize = 4 3 2\nElementType = MET_UINT\nElementDataFile = gen_tail.raw\n", b"")
    rgb = rng.integers(0, 256, size=(6, 7, 3)).astype("u1")
    with open(os.path.join(HERE, "gen_rgb.zraw"), "wb") as fh:
        fh.write(zlib.compress(rgb.tobytes()))
    write("gen_rgb.mhd",
          "ObjectType = Image\nNDims = 2\nBinaryData = True\nCompressedData = True\n"
          "Rotation = 0 1 1 0\nElementSpacing = 0.25 0.5\nDimSize = 7 6\nElementNumberOfChannels = 3\n"
          "ElementType = MET_UCHAR\nElementDataFile = gen_rgb.zraw\n", b"")
    dd = rng.normal(size=(2, 2, 3)).astype("<f8")
    with open(os.path.join(HERE, "gen_double.raw"), "wb") as fh:
        fh.write(b"\0" * 16 + dd.tobytes())
    write("gen_double.mhd",
          "ObjectType = Image\nNDims = 3\nHeaderSize = 16\nDimSize = 3 2 2\nElementType = MET_DOUBLE\n"
          "ElementDataFile = gen_double.raw\n", b"")
    c = rng.integers(-128, 128, size=(5, 4)).astype("i1")
    write("gen_char.mha",
          "ObjectType = Image\nNDims = 2\nBinaryData = True\nOrientation = 1 0 0 -1\n"
          "AnatomicalOrientation = RAI\nElementSpacing = 2 3\nDimSize = 4 5\nElementType = MET_CHAR\n"
          "ElementDataFile = LOCAL\n", c.tobytes())


ITK_FILES = [
    "BrainProtonDensity3Slices.mha", "RatLungSlice1.mha", "ResampleImageFilterInput2x3b.mha",
    "CorpusCallosumMeanShape.mha", "itkBrainSliceComplex.mha",
    "BayesianClassifierInitializerMemberships.mhd", "BrainProtonDensitySliceBorder20.mhd",
    "BrainProtonDensitySliceBorder20DirectionPlus30.mhd", "BrainProtonDensitySliceBorder20DirectionMinus30.mhd",
    "BrainProtonDensitySliceShifted13x17yDirectionPlus30.mhd", "BrainT1SliceBorder20DirectionMinus30.mhd",
]
GEN_FILES = ["gen_short_msb.mha", "gen_4d_float.mha", "gen_tail.mhd", "gen_rgb.mhd", "gen_double.mhd", "gen_char.mha"]


def main():
    generate()
    out = {"command": COMMAND, "reader": "numpy %s frombuffer + zlib, parser in golden.py" % np.__version__,
           "itk": {}, "generated": {}, "nrrd_twin_direction": {}}
    if os.path.isdir(ITK):
        for f in ITK_FILES:
            out["itk"][f] = record(os.path.join(ITK, f))
        twin = os.path.join(ITK, "BrainProtonDensitySliceBorder20DirectionPlus30.nhdr")
        out["nrrd_twin_direction"]["BrainProtonDensitySliceBorder20DirectionPlus30.mhd"] = [float(v) for v in nrrd_direction(twin).reshape(-1)]
    else:
        sys.exit("real-data cache missing: " + ITK)
    for f in GEN_FILES:
        out["generated"][f] = record(os.path.join(HERE, f))
    with open(os.path.join(HERE, "golden.json"), "w") as fh:
        fh.write(compact(json.dumps(out, indent=1)) + "\n")


def compact(s):
    """Puts each innermost list of numbers on one line."""
    flat = re.compile(r"\[\s+([^\[\]{}]*?)\s+\]")
    while True:
        t = flat.sub(lambda m: "[" + " ".join(m.group(1).split()) + "]", s)
        if t == s:
            return s
        s = t


if __name__ == "__main__":
    main()
