#!/usr/bin/env bash
# Smoke test of the real desktop binary: start bin/amid-desktop on a virtual X display with
# the sample study in its Viewer screen, drive it with xdotool (scroll the axial view, a
# window preset, the label toggle, zoom with the + key and Ctrl+wheel, reset, a length
# drawn with the measuring tool, the Home screen), take a screenshot after each step into OUT (default assets/screenshots), and
# check that each step changed what the window shows. Needs Xvfb, xdotool and ImageMagick
# (installed with apt when run as root). Without them it fails, saying what to install:
# the smoke test never passes without having run (make test runs it, in CI and out).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-assets/screenshots}
need=(); for c in Xvfb xdotool import compare; do command -v $c >/dev/null || need+=($c); done
if ((${#need[@]})); then
  pk="xvfb xdotool imagemagick libgl1-mesa-dri"
  if [ "$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $pk >/dev/null; then :
  else echo "screenshots: missing ${need[*]}; run: sudo apt-get install -y $pk"; exit 1; fi
fi
[ -x bin/amid-desktop ] || go build -o bin/amid-desktop .
mkdir -p "$OUT"
# Xvfb picks a display number no X server holds (-displayfd: it writes the number once it
# accepts connections). A number chosen from /tmp/.X11-unix alone can collide with a server
# in another container sharing the network namespace, whose abstract socket it cannot see.
# The app gets a data folder of its own (no run of the user's is listed or touched).
home=$(mktemp -d)
xlog=$(mktemp)
dfile=$(mktemp)
Xvfb -displayfd 3 -screen 0 1280x900x24 3>"$dfile" 2>"$xlog" &
xvfb=$!
app=
log=
cleanup() { # the app first, so it does not lose its display while running
  if [ -n "$app" ]; then kill "$app" 2>/dev/null || true; wait "$app" 2>/dev/null || true; fi
  kill "$xvfb" 2>/dev/null || true
  if [ -n "$log" ]; then rm -f "$log"; fi
  rm -rf "$home" "$xlog" "$dfile"
}
trap cleanup EXIT
n=
for _ in $(seq 300); do
  n=$(head -1 "$dfile" 2>/dev/null || true)
  [[ $n =~ ^[0-9]+$ ]] && break
  kill -0 "$xvfb" 2>/dev/null || break
  sleep 0.1
done
[[ $n =~ ^[0-9]+$ ]] || { echo "screenshots: Xvfb did not start a display within 30 s:"; cat "$xlog"; exit 1; }
export DISPLAY=:$n LANG=C.UTF-8 AMID_HOME=$home
log=$(mktemp)
bin/amid-desktop assets/sample/head_ct.nii.gz assets/sample/head_ct_labels.nii.gz >"$log" 2>&1 &
app=$!
win=
for _ in $(seq 300); do win=$(xdotool search --name '^AMID$' 2>/dev/null | head -1) && [ -n "$win" ] && break; sleep 0.1; done
[ -n "$win" ] || { echo "screenshots: the AMID window did not appear on $DISPLAY within 30 s"; cat "$log" "$xlog"; exit 1; }
sleep 2
shot() { sleep 1; import -window "$win" "$OUT/$1.png"; }
changed() { # changed A B: fail unless the two screenshots differ
  local d; d=$(compare -metric AE "$OUT/$1.png" "$OUT/$2.png" null: 2>&1 || true)
  [ "${d%% *}" -gt 0 ] || { echo "screenshots: $2 shows no change from $1"; exit 1; }
  echo "  $1 → $2: $d pixels changed"
}
# The 1100×760 window: the screens' tabs on the left, then the Viewer's title, summary and
# measuring rows; the measurements' panel on the right; the axial view fills the top-left
# quarter of the rest (x 89–462, y 123–417).
xdotool mousemove --window "$win" 333 240
shot 1-start
for _ in 1 2 3 4 5 6; do xdotool click 4; done   # wheel: six slices up
shot 2-scrolled; changed 1-start 2-scrolled
xdotool click 1                                  # focus the view (moves the crosshair too)
shot 3-focused; changed 2-scrolled 3-focused
xdotool key 3                                    # lung window 1500/−600
shot 4-lung; changed 3-focused 4-lung
# One volume, one window: the key on the axial view changes the coronal pane (top right)
# and the sagittal pane (bottom left) too.
pane() { convert "$OUT/$1.png" -crop "$3" +repage "$OUT/$1-$2.png"; }
for p in coronal:360x280+470+130 sagittal:360x280+95+430; do
  pane 3-focused "${p%%:*}" "${p#*:}"; pane 4-lung "${p%%:*}" "${p#*:}"
  changed "3-focused-${p%%:*}" "4-lung-${p%%:*}"
  rm -f "$OUT/3-focused-${p%%:*}.png" "$OUT/4-lung-${p%%:*}.png"
done
xdotool key l                                    # labels off
shot 5-no-labels; changed 4-lung 5-no-labels
xdotool key l key plus key plus                  # labels on, zoom 1.25² about the cursor
xdotool keydown ctrl click 4 keyup ctrl          # Ctrl+wheel: one more zoom step
shot 6-zoomed; changed 5-no-labels 6-zoomed
xdotool key 0                                    # reset zoom and pan
shot 7-reset; changed 6-zoomed 7-reset
# A length: the Measure selector (x 170–297, y 84–118), its second choice, Length (y 175),
# then a drag across the axial view. Its value shows beside it and in the panel (x 846+).
xdotool mousemove --window "$win" 230 101 click 1
sleep 0.5
xdotool mousemove --window "$win" 230 175 click 1
sleep 0.5
xdotool mousemove --window "$win" 200 200 mousedown 1
for i in $(seq 10); do xdotool mousemove --window "$win" $((200 + 10 * i)) $((200 + 13 * i)); sleep 0.05; done
xdotool mouseup 1
shot 8-length; changed 7-reset 8-length
pane 7-reset panel 250x200+848+160; pane 8-length panel 250x200+848+160
changed 7-reset-panel 8-length-panel
rm -f "$OUT/7-reset-panel.png" "$OUT/8-length-panel.png"
xdotool mousemove --window "$win" 40 22 click 1  # the Home tab
shot 9-home; changed 8-length 9-home
kill -0 "$app" || { echo "screenshots: the app exited"; cat "$log"; exit 1; }

# The review of a finished run (the demo task, 40 s): correcting a prediction with the brush.
kill "$app"; wait "$app" 2>/dev/null || true; app=
[ -x bin/amid ] || { echo "screenshots: bin/amid is not built (make amid)"; exit 1; }
bin/amid demo "$home/demo" >/dev/null
AMID_HOME=$home bin/amid run "$home/demo/task.yaml" --out "$home/run" --budget 40s --folds 2 >"$log" 2>&1 ||
  { echo "screenshots: the demo run failed"; cat "$log"; exit 1; }
bin/amid-desktop "$home/run" >"$log" 2>&1 &
app=$!
win=
for _ in $(seq 300); do win=$(xdotool search --name '^AMID$' 2>/dev/null | head -1) && [ -n "$win" ] && break; sleep 0.1; done
[ -n "$win" ] || { echo "screenshots: the AMID window did not appear for the run"; cat "$log"; exit 1; }
sleep 3
xdotool mousemove --window "$win" 190 100 click 1   # the first test case
sleep 2
shot 10-review
xdotool mousemove --window "$win" 362 619 click 1   # Correct
sleep 0.5
xdotool mousemove --window "$win" 630 619 click 1   # the label selector,
sleep 0.5
shot 11-labels; changed 10-review 11-labels
xdotool mousemove --window "$win" 630 742 click 1   # its 5 haemorrhage
sleep 0.5
xdotool mousemove --window "$win" 600 659 click 1   # a wider brush on the radius slider
sleep 0.5
xdotool mousemove --window "$win" 640 330 mousedown 1   # a brush stroke across the brain
for i in $(seq 10); do xdotool mousemove --window "$win" $((640 + 8 * i)) $((330 + 4 * i)); sleep 0.05; done
xdotool mouseup 1
shot 12-painted; changed 11-labels 12-painted
xdotool mousemove --window "$win" 886 659 click 1   # Undo the stroke
shot 13-undone; changed 12-painted 13-undone
kill -0 "$app" || { echo "screenshots: the app exited"; cat "$log"; exit 1; }
echo "screenshots: 13 written to $OUT"
