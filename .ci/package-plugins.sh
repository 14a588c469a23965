#!/usr/bin/env bash
# package-plugins.sh TARBALL DIR AMID NAME...: put the built-in plugins DIR/amid-plugin-NAME
# into the desktop bundle TARBALL (fyne package's Linux .tar.xz) beside the program, in
# bin/plugins (the program's built-in plugin folder), and the headless program AMID beside
# it as amid (the process and Slurm executors run `amid lane exec`, which the desktop
# program has no command for), and make the bundle's Makefile install and uninstall them
# with it. The program in the bundle was linked with these
# plugins' sha256 (make package), so it trusts exactly them.
set -euo pipefail
usage="usage: package-plugins.sh TARBALL DIR AMID NAME..."
tarball=$(readlink -f "${1:?$usage}")
dir=$(readlink -f "${2:?$usage}")
amid=$(readlink -f "${3:?$usage}")
[ -f "$amid" ] || { echo "package-plugins: no amid program at $3"; exit 1; }
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xJf "$tarball" -C "$tmp"
exe=$(cd "$tmp" && find . -path '*/bin/amid-desktop' -type f | head -1)
mk=$(cd "$tmp" && find . -maxdepth 2 -name Makefile -type f | head -1)
[ -n "$exe" ] && [ -n "$mk" ] || { echo "package-plugins: $tarball holds no bin/amid-desktop and Makefile"; exit 1; }
root=$(dirname "$mk")                 # the bundle's folder: its Makefile's
bin=$(dirname "$exe")                 # where the program is
rel=${bin#"$root"/}                   # usr/local/bin or usr/bin, as the Makefile names it
mkdir -p "$tmp/$bin/plugins"
n=0
for name in "$@"; do
  f=$dir/amid-plugin-$name
  [ -f "$f" ] || continue
  install -m 0755 "$f" "$tmp/$bin/plugins/"
  n=$((n + 1))
done
((n > 0)) || { echo "package-plugins: no plugin of $* in $dir"; exit 1; }
install -m 0755 "$amid" "$tmp/$bin/amid"
cat >>"$tmp/$mk" <<MAKE

# AMID's built-in task plugins, beside the program in bin/plugins (its built-in plugin
# folder; the program trusts exactly these binaries), and the headless amid program the
# process and Slurm executors run.
install: install-amid-plugins
uninstall: uninstall-amid-plugins
user-install: user-install-amid-plugins
user-uninstall: user-uninstall-amid-plugins
install-amid-plugins:
	install -d \$(DESTDIR)\$(PREFIX)/bin/plugins
	install -m00755 $rel/plugins/amid-plugin-* \$(DESTDIR)\$(PREFIX)/bin/plugins/
	install -m00755 $rel/amid \$(DESTDIR)\$(PREFIX)/bin/amid
uninstall-amid-plugins:
	-rm -r \$(DESTDIR)\$(PREFIX)/bin/plugins
	-rm \$(DESTDIR)\$(PREFIX)/bin/amid
user-install-amid-plugins:
	install -d \$(DESTDIR)\$(HOME)/.local/bin/plugins
	install -m00755 $rel/plugins/amid-plugin-* \$(DESTDIR)\$(HOME)/.local/bin/plugins/
	install -m00755 $rel/amid \$(DESTDIR)\$(HOME)/.local/bin/amid
user-uninstall-amid-plugins:
	-rm -r \$(DESTDIR)\$(HOME)/.local/bin/plugins
	-rm \$(DESTDIR)\$(HOME)/.local/bin/amid
MAKE
(cd "$tmp" && tar -cJf "$tarball.new" $(ls -A))
mv "$tarball.new" "$tarball"
echo "package: $n built-in plugins in $rel/plugins, amid in $rel"
