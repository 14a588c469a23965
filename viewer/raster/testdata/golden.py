#!/usr/bin/python3
"""Expected values for the raster tests, read with Pillow (PNG, BMP, LZW TIFF), tifffile (TIFF) and,
for 16-bit colour PNG which Pillow truncates to 8 bits, a small zlib PNG decoder below;
and the small generated seed files the tests and the fuzz target use.

Run from the repository root:
    /usr/bin/python3 viewer/raster/testdata/golden.py
It rewrites viewer/raster/testdata/gen_* and golden.json. Real files come from the real-data
cache (.cache/realdata, see assets/realdata/SOURCES.md).

Conventions encoded here (the package documentation gives the reasons):
  - a palette of opaque greys gives one grey channel; other palettes RGB, or RGBA with
    transparency; 1-bit images give 0/255;
  - spacing: PNG sCAL in mm, pHYs ignored; TIFF 25.4/XResolution (inch, the default unit),
    10/XResolution (cm), 1 for unit none; BMP 1;
  - TIFF: the first page only.
"""
import io
import json
import os
import re
import struct
import sys
import zlib

import numpy as np
import PIL
import tifffile
from PIL import Image

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
HERE = os.path.join(ROOT, "viewer", "raster", "testdata")
CACHE = os.path.join(ROOT, ".cache", "realdata")
ITK = "root/usr/share/doc/insighttoolkit5-examples/examples/Data"
SKI = "root/usr/lib/python3/dist-packages/skimage/data"
COMMAND = "/usr/bin/python3 viewer/raster/testdata/golden.py"
GO = {"uint8": "uint8", "int8": "int8", "uint16": "uint16", "int16": "int16", "uint32": "uint32",
      "int32": "int32", "float32": "float32", "float64": "float64"}


def png_chunks(b):
    p = 8
    while p < len(b):
        n, = struct.unpack(">I", b[p:p + 4])
        yield b[p + 4:p + 8], b[p + 8:p + 8 + n]
        p += 12 + n


def png16(b):
    """Decodes a non-interlaced 16-bit PNG (grey, RGB, grey+alpha, RGBA)."""
    ihdr = dict(png_chunks(b))[b"IHDR"]
    w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", ihdr)
    assert depth == 16 and interlace == 0
    c = {0: 1, 2: 3, 4: 2, 6: 4}[ctype]
    raw = zlib.decompress(b"".join(d for t, d in png_chunks(b) if t == b"IDAT"))
    bpp, stride = 2 * c, 2 * c * w
    out = np.zeros((h, stride), np.int32)
    prev = np.zeros(stride, np.int32)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = np.frombuffer(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)], np.uint8).astype(np.int32)
        cur = np.zeros(stride, np.int32)
        for i in range(stride):
            a = cur[i - bpp] if i >= bpp else 0
            up = prev[i]
            ul = prev[i - bpp] if i >= bpp else 0
            if f == 0:
                pr = 0
            elif f == 1:
                pr = a
            elif f == 2:
                pr = up
            elif f == 3:
                pr = (a + up) // 2
            else:
                pa, pb, pc = abs(up - ul), abs(a - ul), abs(a + up - 2 * ul)
                pr = a if pa <= pb and pa <= pc else (up if pb <= pc else ul)
            cur[i] = (line[i] + pr) & 0xFF
        out[y] = cur
        prev = cur
    px = out.astype(np.uint16).reshape(h, w, c, 2)
    return (px[..., 0] << 8 | px[..., 1]).astype(np.uint16)


def scal(b):
    for t, d in png_chunks(b):
        if t == b"sCAL":
            x, y = d[1:].split(b"\0")
            return float(x), float(y)
    return 1.0, 1.0


def read_png(path):
    b = open(path, "rb").read()
    depth, ctype = b[24], b[25]
    if depth == 16 and ctype != 3:
        a = png16(b)
    else:
        im = Image.open(path)
        if im.mode == "P":
            pal = np.array(im.convert("RGBA"))
            if "transparency" in im.info:
                a = pal
            elif (pal[..., 0] == pal[..., 1]).all() and (pal[..., 1] == pal[..., 2]).all() and grey_palette(im):
                a = pal[..., 0]
            else:
                a = pal[..., :3]
        elif im.mode == "1":
            a = np.array(im.convert("L"))
        else:
            a = np.array(im)
    sx, sy = scal(b)
    return a, [sx, sy, 1.0]


def grey_palette(im):
    p = np.array(im.getpalette()).reshape(-1, 3)
    used = np.unique(np.array(im))
    return bool((p[used, 0] == p[used, 1]).all() and (p[used, 1] == p[used, 2]).all()) and \
        bool((p[:, 0] == p[:, 1]).all() and (p[:, 1] == p[:, 2]).all())


def read_bmp(path):
    im = Image.open(path)
    if im.mode == "P":
        if grey_palette(im):
            return np.array(im.convert("L")), [1.0, 1.0, 1.0]
        return np.array(im.convert("RGB")), [1.0, 1.0, 1.0]
    return np.array(im), [1.0, 1.0, 1.0]


def read_tiff(path):
    with tifffile.TiffFile(path) as t:
        p = t.pages[0]
        if p.compression == 5:  # tifffile needs imagecodecs for LZW; Pillow's libtiff has it
            a = np.array(Image.open(path))
        else:
            a = p.asarray()
        if p.planarconfig == 2 and a.ndim == 3:
            a = np.moveaxis(a, 0, -1)
        tags = p.tags
        sp = [1.0, 1.0, 1.0]
        if "XResolution" in tags and "YResolution" in tags:
            xr, yr = [v[0] / v[1] for v in (tags["XResolution"].value, tags["YResolution"].value)]
            unit = int(tags["ResolutionUnit"].value) if "ResolutionUnit" in tags else 2
            if xr > 0 and yr > 0 and unit in (2, 3):
                k = 25.4 if unit == 2 else 10.0
                sp = [k / xr, k / yr, 1.0]
        return a, sp


def record(path):
    ext = path.lower().rsplit(".", 1)[1]
    a, sp = {"png": read_png, "bmp": read_bmp, "tif": read_tiff, "tiff": read_tiff}[ext](path)
    if a.ndim == 2:
        a = a[..., np.newaxis]
    if a.dtype == np.int32 and path.lower().endswith(".png"):  # Pillow's 16-bit grey mode "I"
        a = a.astype(np.uint16)
    y, x, c = a.shape
    pts = [(0, 0, 0), (x // 2, y // 2, 0), (x - 1, y - 1, c - 1), (x // 3, y // 4, c // 2)]
    am = int(np.argmax(a.astype(np.float64).sum(axis=2)))
    pts.append((am % x, am // x, 0))
    return {
        "dims": [x, y, 1, c], "dtype": GO[str(a.dtype)], "spacing": sp,
        "sum": float(a.astype(np.float64).sum()), "min": float(a.min()), "max": float(a.max()),
        "voxels": [[int(p[0]), int(p[1]), 0, int(p[2]), float(a[p[1], p[0], p[2]])] for p in pts],
    }


def png_with_chunk(path, chunk_type, data):
    b = open(path, "rb").read()
    chunk = struct.pack(">I", len(data)) + chunk_type + data + struct.pack(">I", zlib.crc32(chunk_type + data))
    open(path, "wb").write(b[:33] + chunk + b[33:])


def generate():
    rng = np.random.default_rng(20261130)
    g = lambda n: os.path.join(HERE, n)
    labels = np.zeros((20, 24), np.uint32)
    labels[2:8, 3:9] = 1
    labels[10:18, 5:20] = 70000  # beyond uint16
    labels[0, 23] = 4294967295
    tifffile.imwrite(g("gen_u32_labels.tif"), labels)
    tifffile.imwrite(g("gen_i32_deflate.tif"), rng.integers(-2**31, 2**31 - 1, size=(9, 11), dtype=np.int64).astype(np.int32),
                     compression="zlib", predictor=True)
    tifffile.imwrite(g("gen_f32_cm.tif"), rng.normal(size=(8, 6)).astype(np.float32),
                     resolution=(4.0, 5.0), resolutionunit="CENTIMETER")
    tifffile.imwrite(g("gen_i16_be_tiles.tif"), rng.integers(-30000, 30000, size=(40, 36)).astype(">i2"),
                     tile=(16, 16), byteorder=">")
    tifffile.imwrite(g("gen_rgba_deflate.tif"), rng.integers(0, 256, size=(10, 12, 4)).astype(np.uint8),
                     photometric="rgb", extrasamples=["unassalpha"], compression="zlib")
    tifffile.imwrite(g("gen_u16_rgb_planar.tif"), rng.integers(0, 65536, size=(3, 7, 5)).astype(np.uint16),
                     photometric="rgb", planarconfig="separate")
    gray = (np.add.outer(np.arange(30), np.arange(40)) * 3 % 256).astype(np.uint8)
    Image.fromarray(gray).save(g("gen_packbits.tif"), compression="packbits")
    Image.fromarray(rng.integers(0, 65536, size=(13, 17)).astype(np.uint16)).save(g("gen_u16_lzw.tif"), compression="tiff_lzw")
    Image.fromarray(rng.integers(0, 256, size=(6, 5, 3)).astype(np.uint8)).save(g("gen_rgb.bmp"))
    Image.fromarray(gray).save(g("gen_gray.bmp"))
    pal = Image.fromarray(rng.integers(0, 4, size=(5, 7)).astype(np.uint8), mode="P")
    pal.putpalette([255, 0, 0, 0, 255, 0, 0, 0, 255, 200, 200, 0] + [0] * (3 * 252))
    pal.save(g("gen_palette.bmp"))
    Image.fromarray(rng.integers(0, 256, size=(4, 6, 2)).astype(np.uint8), mode="LA").save(g("gen_la.png"))
    Image.fromarray(rng.integers(0, 65536, size=(5, 9)).astype(np.uint16)).save(g("gen_u16.png"))
    Image.fromarray(gray).save(g("gen_scal.png"))
    png_with_chunk(g("gen_scal.png"), b"sCAL", b"\x010.7\x001.25")


REAL = [ITK + "/" + f for f in ["BrainProtonDensitySlice.png", "BrainT1Slice.png", "BrainMidSagittalSlice.png",
                                "BrainProtonDensitySliceBorder20Mask.png", "FivePointsDilated.png", "Point.png",
                                "VisibleWomanEyeSlice.png", "BinaryImage.png"]] + \
       [SKI + "/" + f for f in ["camera.png", "palette_color.png", "palette_gray.png", "foo3x5x4indexed.png",
                                "horse.png", "chessboard_RGB.png", "logo.png", "checker_bilevel.png",
                                "chessboard_GRAY_U16.tif", "chessboard_GRAY_U16B.tif", "multipage.tif",
                                "multipage_rgb.tif", "_blobs_3d_fiji_skeleton.tif"]]
GEN = ["gen_u32_labels.tif", "gen_i32_deflate.tif", "gen_f32_cm.tif", "gen_i16_be_tiles.tif", "gen_rgba_deflate.tif",
       "gen_u16_rgb_planar.tif", "gen_packbits.tif", "gen_u16_lzw.tif", "gen_rgb.bmp", "gen_gray.bmp",
       "gen_palette.bmp", "gen_la.png", "gen_u16.png", "gen_scal.png"]


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
    if not os.path.isdir(os.path.join(CACHE, ITK)):
        sys.exit("real-data cache missing: " + CACHE)
    out = {"command": COMMAND,
           "reader": "Pillow %s, tifffile %s, numpy %s" % (PIL.__version__, tifffile.__version__, np.__version__),
           "real": {f: record(os.path.join(CACHE, f)) for f in REAL},
           "generated": {f: record(os.path.join(HERE, f)) for f in GEN}}
    with open(os.path.join(HERE, "golden.json"), "w") as fh:
        fh.write(compact(json.dumps(out, indent=1)) + "\n")


if __name__ == "__main__":
    main()
