#!/bin/sh
# Compiles every GLSL compute shader *.comp of this folder to SPIR-V in the folder given as
# $1 (default: spv), with Debian's glslc (package glslc). make generate runs it; the
# SPIR-V is committed and TestGeneratedCurrent checks it is current.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/spv}
mkdir -p "$out"
for src in "$here"/*.comp; do
  name=$(basename "$src" .comp)
  glslc -O --target-env=vulkan1.1 -I "$here" -o "$out/$name.spv" "$src"
done
