#!/usr/bin/env bash
# Builds bin/gpu-check.tar.xz, everything .ci/gpu-check.sh needs on a machine with a GPU
# that has no Go, no apt and no OpenBLAS (at most 64 MiB may be copied there):
#   - vulkaninfo and the Vulkan loader with vulkaninfo's libraries, from Debian packages
#     unpacked (apt-get download; nothing installed);
#   - the Vulkan parity tests as test binaries (go test -c) of plugins/engine/vk,
#     plugins/engine and plugins/engine/infer, and the GPU benchmark cmd/benchgpu, all
#     built with -tags purego: the CPU side uses the engine's pure-Go SGEMM, so OpenBLAS
#     need not travel (cgo stays on: the Vulkan loader is opened with dlopen);
#   - PyTorch's side of the benchmark (testdata/torch_bench.py, torch_unet.py), used where
#     that machine has PyTorch with CUDA;
#   - bin/amid (no cgo) and the segmentation plugin (purego, cgo for Vulkan) in bin/plugins,
#     which that amid trusts as built (.ci/builtin-sums.sh), for a short training run.
# The binaries need glibc 2.34 or newer there (they are built on Debian 12); gpu-check.sh
# says so when it is older.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bin/gpu-check
rm -rf "$out" bin/gpu-check.tar.xz
mkdir -p "$out/bin" "$out/lib" "$out/torch" "$out/debs"
flags=(-tags purego -trimpath -ldflags "-s -w")
go test -c "${flags[@]}" -o "$out/bin/vk.test" ./plugins/engine/vk
go test -c "${flags[@]}" -o "$out/bin/engine.test" ./plugins/engine
go test -c "${flags[@]}" -o "$out/bin/infer.test" ./plugins/engine/infer
go build "${flags[@]}" -o "$out/bin/benchgpu" ./plugins/engine/cmd/benchgpu
go build "${flags[@]}" -o "$out/bin/plugins/amid-plugin-segmentation" ./plugins/segmentation
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $(.ci/builtin-sums.sh "$out/bin/plugins" segmentation)" -o "$out/bin/amid" ./app/cmd/amid
cp plugins/engine/testdata/torch_bench.py plugins/engine/testdata/torch_unet.py "$out/torch/"
cp .ci/gpu-check.sh "$out/"
# vulkaninfo, the loader, and vulkaninfo's libraries that a minimal machine may lack.
(cd "$out/debs" && apt-get download -qq vulkan-tools libvulkan1 libwayland-client0 libx11-6 libxcb1 libxau6 \
  libxdmcp6 libffi8 libbsd0 libmd0 >/dev/null)
for d in "$out"/debs/*.deb; do dpkg-deb -x "$d" "$out/debs/root"; done
cp "$out/debs/root/usr/bin/vulkaninfo" "$out/bin/"
cp -a "$out"/debs/root/usr/lib/x86_64-linux-gnu/*.so* "$out/lib/"
rm -rf "$out/debs"
tar -C bin -cJf bin/gpu-check.tar.xz gpu-check
size=$(stat -c %s bin/gpu-check.tar.xz)
echo "bin/gpu-check.tar.xz: $((size / 1024 / 1024)) MiB ($(du -sh "$out" | cut -f1) unpacked)"
[ "$size" -le $((64 << 20)) ] || { echo "gpu-bundle: over the 64 MiB that may be copied"; exit 1; }
