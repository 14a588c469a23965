#!/usr/bin/env bash
# Smoke test of the real desktop binary: start bin/amid-desktop on a virtual X display,
# drive it with xdotool (scroll the axial view, a window preset, the label toggle), take a
# screenshot after each step into OUT (default assets/screenshots), and check that each
# step changed what the window shows. Needs Xvfb, xdotool and ImageMagick (installed with
# apt when run as root).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-assets/screenshots}
need=(); for c in Xvfb xdotool import compare; do command -v $c >/dev/null || need+=($c); done
if ((${#need[@]})); then
  pk="xvfb xdotool imagemagick libgl1-mesa-dri"
  if [ "$(id -u)" = 0 ]; then apt-get install -y -qq --no-install-recommends $pk >/dev/null
  else echo "screenshots need: sudo apt-get install -y $pk"; exit 1; fi
fi
[ -x bin/amid-desktop ] || go build -o bin/amid-desktop .
mkdir -p "$OUT"
export DISPLAY=:97 LANG=C.UTF-8
Xvfb "$DISPLAY" -screen 0 1024x768x24 >/dev/null 2>&1 &
xvfb=$!
app=
log=
cleanup() { # the app first, so it does not lose its display while running
  if [ -n "$app" ]; then kill "$app" 2>/dev/null || true; wait "$app" 2>/dev/null || true; fi
  kill "$xvfb" 2>/dev/null || true
  if [ -n "$log" ]; then rm -f "$log"; fi
}
trap cleanup EXIT
for _ in $(seq 50); do xdotool getmouselocation >/dev/null 2>&1 && break; sleep 0.1; done
log=$(mktemp)
bin/amid-desktop >"$log" 2>&1 &
app=$!
win=
for _ in $(seq 100); do win=$(xdotool search --name '^AMID$' 2>/dev/null | head -1) && [ -n "$win" ] && break; sleep 0.1; done
[ -n "$win" ] || { echo "screenshots: the AMID window did not appear"; cat "$log"; exit 1; }
sleep 2
shot() { sleep 1; import -window "$win" "$OUT/$1.png"; }
changed() { # changed A B: fail unless the two screenshots differ
  local d; d=$(compare -metric AE "$OUT/$1.png" "$OUT/$2.png" null: 2>&1 || true)
  [ "${d%% *}" -gt 0 ] || { echo "screenshots: $2 shows no change from $1"; exit 1; }
  echo "  $1 → $2: $d pixels changed"
}
# The axial view fills the top-left quarter of the 960×720 window.
xdotool mousemove --window "$win" 240 230
shot 1-start
for _ in 1 2 3 4 5 6; do xdotool click 4; done   # wheel: six slices up
shot 2-scrolled; changed 1-start 2-scrolled
xdotool click 1                                  # focus the view (moves the crosshair too)
shot 3-focused; changed 2-scrolled 3-focused
xdotool key 3                                    # lung window 1500/−600
shot 4-lung; changed 3-focused 4-lung
xdotool key l                                    # labels off
shot 5-no-labels; changed 4-lung 5-no-labels
kill -0 "$app" || { echo "screenshots: the app exited"; cat "$log"; exit 1; }
echo "screenshots: 5 written to $OUT"
