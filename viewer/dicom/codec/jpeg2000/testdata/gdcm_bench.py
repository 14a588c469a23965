#!/usr/bin/python3
"""Times GDCM's decoding of a compressed DICOM file, for BenchmarkDecodeCT.

usage: gdcm_bench.py IN.dcm N
Decodes the pixel data N times in this process (reading the file each time, outside the
timing) and prints the mean CPU and wall time of one decode in milliseconds as JSON.
"""
import json
import sys
import time

import gdcm

path, n = sys.argv[1], int(sys.argv[2])
cpu = wall = 0.0
for _ in range(n):
    reader = gdcm.ImageReader()
    reader.SetFileName(path)
    if not reader.Read():
        sys.exit("cannot read " + path)
    change = gdcm.ImageChangeTransferSyntax()
    change.SetTransferSyntax(gdcm.TransferSyntax(gdcm.TransferSyntax.ExplicitVRLittleEndian))
    change.SetInput(reader.GetImage())
    c0, w0 = time.process_time(), time.perf_counter()
    if not change.Change():
        sys.exit("cannot decode " + path)
    cpu += time.process_time() - c0
    wall += time.perf_counter() - w0
print(json.dumps({"cpu_ms": 1000 * cpu / n, "wall_ms": 1000 * wall / n}))
