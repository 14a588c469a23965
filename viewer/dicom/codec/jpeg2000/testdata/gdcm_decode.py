#!/usr/bin/python3
"""Decodes a DICOM file's pixel data with GDCM (python3-gdcm) for the jpeg2000 tests.

usage: gdcm_decode.py IN.dcm OUT.raw
Writes GDCM's pixel buffer (all frames, samples interleaved as GDCM returns them, little
endian) to OUT.raw and prints its layout as JSON. Exits 2 when GDCM cannot decode the file.
"""
import json
import sys

import gdcm

reader = gdcm.ImageReader()
reader.SetFileName(sys.argv[1])
if not reader.Read():
    sys.exit(2)
# Transcoding to Explicit VR Little Endian decodes the pixel data and, unlike
# Image.GetBuffer, says when that fails.
change = gdcm.ImageChangeTransferSyntax()
change.SetTransferSyntax(gdcm.TransferSyntax(gdcm.TransferSyntax.ExplicitVRLittleEndian))
change.SetInput(reader.GetImage())
if not change.Change():
    sys.exit(2)
img = change.GetOutput()
pf = img.GetPixelFormat()
dims = [img.GetDimension(i) for i in range(img.GetNumberOfDimensions())]
buf = img.GetBuffer()
# python3-gdcm returns the buffer as a str decoded with surrogateescape.
data = buf.encode("utf-8", "surrogateescape") if isinstance(buf, str) else bytes(buf)
with open(sys.argv[2], "wb") as f:
    f.write(data)
print(json.dumps({
    "columns": dims[0],
    "rows": dims[1],
    "frames": dims[2] if len(dims) > 2 else 1,
    "bits_allocated": pf.GetBitsAllocated(),
    "bits_stored": pf.GetBitsStored(),
    "signed": bool(pf.GetPixelRepresentation()),
    "samples_per_pixel": pf.GetSamplesPerPixel(),
    "planar_configuration": img.GetPlanarConfiguration(),
    "photometric": str(img.GetPhotometricInterpretation()).strip(),
    "bytes": len(data),
}))
