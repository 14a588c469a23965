#!/usr/bin/env bash
# builtin-sums.sh DIR NAME...: the linker flag that embeds the sha256 of the built-in
# plugins DIR/amid-plugin-NAME (those that exist) in an AMID program:
#   -X=amid/host.builtinSums=NAME:SHA256,NAME:SHA256
# The host then trusts exactly those binaries in its built-in plugin folder (host package
# doc). The Makefile links bin/amid and bin/amid-desktop with it right after building the
# plugins (make build, make package); app/cli's TestBuiltinTrust links a real amid with it.
set -euo pipefail
dir=${1:?usage: builtin-sums.sh DIR NAME...}
shift
pairs=()
for name in "$@"; do
  f=$dir/amid-plugin-$name
  [ -f "$f" ] || continue
  sum=$(sha256sum "$f")
  pairs+=("$name:${sum%% *}")
done
(IFS=,; echo "-X=amid/host.builtinSums=${pairs[*]}")
