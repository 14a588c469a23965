#!/usr/bin/python3
"""Expected values for the nrrd tests, from a NRRD parser written here with numpy, gzip,
bz2 and binascii (independent of the Go reader), and the small generated seed files the
tests and the fuzz target use (3D Slicer-style segmentations among them).

Run from the repository root:
    /usr/bin/python3 viewer/nrrd/testdata/golden.py
It rewrites viewer/nrrd/testdata/gen_* and golden.json. The ITK example .nhdr files come from
the real-data cache (.cache/realdata, see assets/realdata/SOURCES.md).

Conventions checked: world coordinates in LPS (RAS negates x and y, LAS negates y), spacing
= length of an axis's space direction, the "none" axis becomes the last (channel) index.
"""
import binascii
import bz2
import gzip
import json
import os
import re
import sys

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
HERE = os.path.join(ROOT, "viewer", "nrrd", "testdata")
ITK = os.path.join(ROOT, ".cache", "realdata", "root/usr/share/doc/insighttoolkit5-examples/examples/Data")
COMMAND = "/usr/bin/python3 viewer/nrrd/testdata/golden.py"

TYPES = {"uchar": "u1", "unsigned char": "u1", "uint8": "u1", "uint8_t": "u1",
         "signed char": "i1", "int8": "i1", "int8_t": "i1",
         "short": "i2", "short int": "i2", "signed short": "i2", "int16": "i2", "int16_t": "i2",
         "ushort": "u2", "unsigned short": "u2", "uint16": "u2", "uint16_t": "u2",
         "int": "i4", "signed int": "i4", "int32": "i4", "int32_t": "i4",
         "uint": "u4", "unsigned int": "u4", "uint32": "u4", "uint32_t": "u4",
         "float": "f4", "double": "f8"}
GO = {"u1": "uint8", "i1": "int8", "u2": "uint16", "i2": "int16", "u4": "uint32",
      "i4": "int32", "f4": "float32", "f8": "float64"}


def parse(path):
    blob = open(path, "rb").read()
    lines, pos = [], 0
    while pos < len(blob):
        end = blob.find(b"\n", pos)
        end = len(blob) if end < 0 else end
        line = blob[pos:end].decode("latin-1").rstrip("\r")
        pos = end + 1
        if line == "":
            break
        lines.append(line)
    assert lines[0].startswith("NRRD000")
    f, kv = {}, {}
    for line in lines[1:]:
        if line.startswith("#"):
            continue
        if ":=" in line:
            k, v = line.split(":=", 1)
            kv[k] = v
        else:
            k, v = line.split(": ", 1)
            f[k.strip().lower()] = v.strip()
    code = TYPES[f["type"].lower()]
    dt = np.dtype(code).newbyteorder(">" if f.get("endian") == "big" else "<")
    sizes = [int(s) for s in f["sizes"].split()]
    count = int(np.prod(sizes))
    if "data file" in f:
        data = open(os.path.join(os.path.dirname(path), f["data file"]), "rb").read()
    else:
        data = blob[pos:]
    for _ in range(int(f.get("line skip", "0"))):
        data = data[data.index(b"\n") + 1:]
    bskip = int(f.get("byte skip", "0"))
    enc = f["encoding"]
    if enc in ("gzip", "gz"):
        data = gzip.decompress(data)
    elif enc in ("bzip2", "bz2"):
        data = bz2.decompress(data)
    if bskip == -1:
        data = data[len(data) - count * dt.itemsize:]
    elif enc not in ("ascii", "text", "txt", "hex"):
        data = data[bskip:]
    if enc in ("ascii", "text", "txt"):
        a = np.array([float(s) for s in data.decode().replace(",", " ").split()][:count]).astype(code)
    else:
        if enc == "hex":
            data = binascii.unhexlify(b"".join(data.split()))
        a = np.frombuffer(data[:count * dt.itemsize], dtype=dt).astype(dt.newbyteorder("="))
    a = a.reshape(list(reversed(sizes)))  # slowest axis first
    dirs = None
    if "space directions" in f:
        dirs = [None if it == "none" else [float(x) for x in it.strip("()").split(",")]
                for it in re.findall(r"\([^)]*\)|none", f["space directions"])]
    kinds = f.get("kinds", "").split()
    dim = len(sizes)
    if dirs is not None:
        chan = [i for i in range(dim) if dirs[i] is None]
    elif kinds:
        chan = [i for i in range(dim) if kinds[i].lower() not in ("domain", "space", "???", "none")]
    elif dim == 4:
        chan = [3]
    else:
        chan = []
    spatial = [i for i in range(dim) if i not in chan]
    # numpy axis of file axis i is dim-1-i; order as (z, y, x, c).
    order = [dim - 1 - i for i in reversed(spatial)] + [dim - 1 - i for i in chan]
    a = np.transpose(a, order)
    while a.ndim < 3 + (1 if chan else 0):
        a = a[np.newaxis]
    if not chan:
        a = a[..., np.newaxis]
    spacing, origin, direction = [1.0, 1.0, 1.0], [0.0, 0.0, 0.0], np.eye(3)
    if dirs is not None:
        cols = []
        for j, ax in enumerate(spatial):
            v = np.zeros(3)
            v[:len(dirs[ax])] = dirs[ax]
            spacing[j] = float(np.linalg.norm(v))
            cols.append(v / spacing[j])
        if len(cols) == 2:
            cols.append(np.cross(cols[0], cols[1]))
        direction = np.array(cols).T
        if "space origin" in f:
            o = [float(x) for x in f["space origin"].strip("()").split(",")]
            origin[:len(o)] = o
        space = f.get("space", "").lower()
        flip = {"right-anterior-superior": [-1, -1, 1], "ras": [-1, -1, 1],
                "left-anterior-superior": [1, -1, 1], "las": [1, -1, 1]}.get(space, [1, 1, 1])
        direction = np.diag(flip) @ direction
        origin = [float(o * s) for o, s in zip(origin, flip)]
    elif "spacings" in f:
        sp = [float(x) for x in f["spacings"].split()]
        for j, ax in enumerate(spatial):
            if not np.isnan(sp[ax]):
                spacing[j] = sp[ax]
    return a, spacing, origin, direction, code, kv


def segments(kv):
    idx = sorted({int(m.group(1)) for k in kv for m in [re.match(r"Segment(\d+)_", k)] if m})
    return [{"index": i, "id": kv.get("Segment%d_ID" % i, ""), "name": kv.get("Segment%d_Name" % i, ""),
             "label": int(kv.get("Segment%d_LabelValue" % i, "1")), "layer": int(kv.get("Segment%d_Layer" % i, str(i)))}
            for i in idx]


def record(path):
    a, sp, org, d, code, kv = parse(path)
    z, y, x, c = a.shape
    pts = [(0, 0, 0, 0), (x // 2, y // 2, z // 2, 0), (x - 1, y - 1, z - 1, c - 1), (x // 3, y // 4, 0, c // 2)]
    am = int(np.argmax(a.astype(np.float64).sum(axis=3)))
    pts.append((am % x, (am // x) % y, am // (x * y), 0))
    out = {
        "dims": [x, y, z, c], "dtype": GO[code], "spacing": sp, "origin": org,
        "direction": [float(v) for v in d.reshape(-1)],
        "sum": float(a.astype(np.float64).sum()), "min": float(a.min()), "max": float(a.max()),
        "voxels": [[int(p[0]), int(p[1]), int(p[2]), int(p[3]), float(a[p[2], p[1], p[0], p[3]])] for p in pts],
    }
    seg = segments(kv)
    if seg:
        out["segments"] = seg
    return out


def write(name, header, payload=b""):
    with open(os.path.join(HERE, name), "wb") as fh:
        fh.write(header.encode("ascii") + payload)


SLICER_HEAD = ("NRRD0004\n# Complete NRRD file format specification at:\n"
               "# http://teem.sourceforge.net/nrrd/format.html\n")


def slicer_segment(i, sid, name, label, layer, color):
    return ("Segment{i}_Color:={c}\nSegment{i}_ColorAutoGenerated:=0\nSegment{i}_Extent:=0 5 0 4 0 3\n"
            "Segment{i}_ID:={sid}\nSegment{i}_LabelValue:={label}\nSegment{i}_Layer:={layer}\n"
            "Segment{i}_Name:={name}\nSegment{i}_NameAutoGenerated:=0\n"
            "Segment{i}_Tags:=Segmentation.Status:inprogress|TerminologyEntry:Segmentation category and type - 3D Slicer General Anatomy list~SCT^123037004^Anatomical Structure~SCT^10200004^Liver~^^~Anatomic codes - DICOM master list~^^~^^|\n"
            ).format(i=i, sid=sid, name=name, label=label, layer=layer, c=" ".join("%g" % v for v in color))


def generate():
    rng = np.random.default_rng(20261130)
    th = np.deg2rad(25)
    d = np.array([[np.cos(th), -np.sin(th), 0], [np.sin(th), np.cos(th), 0], [0, 0, 1.0]]) @ np.diag([0.8, 0.9, 2.5])
    sd = " ".join("(%s)" % ",".join("%.17g" % v for v in d[:, j]) for j in range(3))
    a = rng.integers(-2000, 2000, size=(4, 5, 6)).astype(">i2")
    write("gen_gzip_ras.nrrd", "NRRD0004\ntype: short\ndimension: 3\nspace: right-anterior-superior\n"
          "sizes: 6 5 4\nspace directions: %s\nkinds: domain domain domain\nendian: big\nencoding: gzip\n"
          "space origin: (-12.5,30.25,-7)\n\n" % sd, gzip.compress(a.tobytes()))
    u = rng.integers(0, 65536, size=(3, 4, 5)).astype("<u2")
    with open(os.path.join(HERE, "gen_skip.raw"), "wb") as fh:
        fh.write(b"first text line\nsecond line\n" + b"\xff" * 5 + u.tobytes())
    write("gen_skip.nhdr", "NRRD0005\n# detached, with line and byte skips\ntype: uint16_t\ndimension: 3\n"
          "space: left-posterior-superior\nsizes: 5 4 3\nspace directions: (1,0,0) (0,1,0) (0,0,1.5)\n"
          "endian: little\nencoding: raw\nline skip: 2\nbyte skip: 5\ndata file: gen_skip.raw\n")
    rgb = rng.integers(0, 256, size=(4, 5, 3)).astype("u1")
    write("gen_rgb2d.nrrd", "NRRD0004\ntype: uchar\ndimension: 3\nspace dimension: 2\nsizes: 3 5 4\n"
          "space directions: none (0.5,0) (0,0.25)\nkinds: RGB-color domain domain\nencoding: raw\n"
          "space origin: (10,20)\n\n", rgb.tobytes())
    t = rng.normal(size=(5, 2, 3, 4)).astype("<f4")
    write("gen_time_last.nrrd", "NRRD0004\ntype: float\ndimension: 4\nspace: left-anterior-superior\n"
          "sizes: 4 3 2 5\nspace directions: (2,0,0) (0,2,0) (0,0,2) none\nkinds: domain domain domain list\n"
          "endian: little\nencoding: gz\nspace origin: (1,2,3)\n\n", gzip.compress(t.tobytes()))
    iv = rng.integers(-10**6, 10**6, size=(2, 3, 4)).astype("i4")
    write("gen_ascii.nrrd", "NRRD0004\ntype: int\ndimension: 3\nsizes: 4 3 2\nspacings: 1.5 2.5 3.5\n"
          "encoding: ascii\n\n", ("\n".join(" ".join(str(v) for v in row) for row in iv.reshape(-1, 4)) + "\n").encode())
    hv = rng.integers(-128, 128, size=(3, 4)).astype("i1")
    write("gen_hex.nrrd", "NRRD0004\ntype: signed char\ndimension: 2\nsizes: 4 3\nencoding: hex\n\n",
          binascii.hexlify(hv.tobytes()) + b"\n")
    dv = rng.normal(size=(2, 2, 2)).astype(">f8")
    write("gen_bzip2.nrrd", "NRRD0004\ntype: double\ndimension: 3\nspace: scanner-xyz\nsizes: 2 2 2\n"
          "space directions: (0,1,0) (1,0,0) (0,0,-1)\nendian: big\nencoding: bzip2\n\n", bz2.compress(dv.tobytes()))
    # 3D Slicer segmentation, one layer holding two segments with labels 1 and 2.
    lab = np.zeros((4, 5, 6), "u1")
    lab[1:3, 1:4, 1:5] = 1
    lab[2:4, 0:2, 0:2] = 2
    write("gen_seg.seg.nrrd", SLICER_HEAD + "type: unsigned char\ndimension: 3\nspace: right-anterior-superior\n"
          "sizes: 6 5 4\nspace directions: (-1,0,0) (0,-1,0) (0,0,1)\nkinds: domain domain domain\n"
          "encoding: gzip\nspace origin: (10,20,-30)\n"
          "Segmentation_ContainedRepresentationNames:=Binary labelmap|\n"
          "Segmentation_MasterRepresentation:=Binary labelmap\nSegmentation_ReferenceImageExtentOffset:=0 0 0\n"
          + slicer_segment(0, "Segment_1", "liver", 1, 0, (0.847059, 0.396078, 0.309804))
          + slicer_segment(1, "Segment_2", "tumor", 2, 0, (0.564706, 0.933333, 0.564706)) + "\n",
          gzip.compress(lab.tobytes()))
    # Two overlapping segments in two layers: a 4D file whose first axis is the layer.
    layers = np.zeros((4, 5, 6, 2), "u1")  # z, y, x, layer
    layers[1:3, 1:4, 1:5, 0] = 1
    layers[0:3, 2:5, 3:6, 1] = 1
    write("gen_layers.seg.nrrd", SLICER_HEAD + "type: unsigned char\ndimension: 4\nspace: left-posterior-superior\n"
          "sizes: 2 6 5 4\nspace directions: none (0.5,0,0) (0,0.5,0) (0,0,2)\nkinds: list domain domain domain\n"
          "encoding: gzip\nspace origin: (0,0,0)\n"
          + slicer_segment(0, "Segment_1", "left kidney", 1, 0, (0.9, 0.1, 0.1))
          + slicer_segment(1, "Segment_2", "right kidney", 1, 1, (0.1, 0.9, 0.1)) + "\n",
          gzip.compress(layers.tobytes()))


ITK_FILES = ["BrainProtonDensitySliceBorder20.nhdr", "BrainProtonDensitySliceBorder20DirectionPlus30.nhdr",
             "BrainProtonDensitySliceShifted13x17yDirectionPlus30.nhdr", "BrainT1SliceBorder20DirectionPlus30.nhdr"]
GEN_FILES = ["gen_gzip_ras.nrrd", "gen_skip.nhdr", "gen_rgb2d.nrrd", "gen_time_last.nrrd", "gen_ascii.nrrd",
             "gen_hex.nrrd", "gen_bzip2.nrrd", "gen_seg.seg.nrrd", "gen_layers.seg.nrrd"]


def compact(s):
    """Puts each innermost list of numbers on one line."""
    flat = re.compile(r"\[\s+([^\[\]{}]*?)\s+\]")
    while True:
        t = flat.sub(lambda m: "[" + " ".join(m.group(1).split()) + "]", s)
        if t == s:
            return s
        s = t


def main():
    generate()
    if not os.path.isdir(ITK):
        sys.exit("real-data cache missing: " + ITK)
    out = {"command": COMMAND, "reader": "numpy %s, parser in golden.py" % np.__version__,
           "itk": {f: record(os.path.join(ITK, f)) for f in ITK_FILES},
           "generated": {f: record(os.path.join(HERE, f)) for f in GEN_FILES}}
    with open(os.path.join(HERE, "golden.json"), "w") as fh:
        fh.write(compact(json.dumps(out, indent=1)) + "\n")


if __name__ == "__main__":
    main()
