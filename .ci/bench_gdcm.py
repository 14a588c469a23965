#!/usr/bin/python3
"""The reference side of .ci/bench-io.sh's compressed series: read and decode every file of
a DICOM series folder N times with Debian's python3-gdcm (GDCM 3.0, whose JPEG-LS decoder is
CharLS and whose lossless JPEG decoder is its libjpeg), on one thread as GDCM does, and print
one JSON line like benchio's: median wall and CPU milliseconds per series."""
import glob, json, os, sys, time

import gdcm


def load(folder):
    n = 0
    for p in sorted(glob.glob(os.path.join(folder, "*.dcm"))):
        r = gdcm.ImageReader()
        r.SetFileName(p)
        if not r.Read():
            sys.exit("gdcm cannot read " + p)
        buf = r.GetImage().GetBuffer()
        if buf is None:
            sys.exit("gdcm cannot decode " + p)
        n += len(buf)
    return n


def main():
    n, folder = int(sys.argv[1]), sys.argv[2]
    gdcm.Trace.WarningOff()
    times, cpus, decoded = [], [], 0
    for _ in range(n):
        t0, c0 = time.perf_counter(), time.process_time()
        decoded = load(folder)
        times.append((time.perf_counter() - t0) * 1000)
        cpus.append((time.process_time() - c0) * 1000)
    times.sort()
    cpus.sort()
    print(json.dumps({"tool": "gdcm", "path": folder, "median_ms": times[len(times) // 2], "min_ms": times[0],
                      "cpu_ms": cpus[len(cpus) // 2], "decoded_mb": decoded / 2**20}))


main()
