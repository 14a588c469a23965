"""Writes labels.json, AMID's label colour table. Run: /usr/bin/python3 assets/colors/gen.py

Label 0 is transparent. Labels 1..255 are chosen greedily by farthest-point sampling in RGB:
the candidates are the grid {0, 15, …, 255}^3 without grayish colours (max−min channel below
80, which would vanish over a gray image); label 1 is pure red (255, 0, 0) and each next label
is the candidate whose smallest Euclidean distance to the labels already chosen is largest
(ties: the first in grid order). Early labels are therefore the most distinct.
"""
import json
import os

levels = range(0, 256, 15)
cands = [(r, g, b) for r in levels for g in levels for b in levels if max(r, g, b) - min(r, g, b) >= 80]
chosen = [(255, 0, 0)]
dist = [sum((a - b) ** 2 for a, b in zip(c, chosen[0])) for c in cands]
while len(chosen) < 255:
    i = max(range(len(cands)), key=lambda k: (dist[k], -k))
    c = cands[i]
    chosen.append(c)
    dist = [min(d, sum((a - b) ** 2 for a, b in zip(x, c))) for d, x in zip(dist, cands)]
cols = [[0, 0, 0, 0]] + [[r, g, b, 255] for r, g, b in chosen]
doc = {
    "description": "AMID label colours: index = label value; 0 is transparent; labels 1..255 by greedy farthest-point sampling in RGB over the grid {0,15,...,255}^3 without grayish colours (max-min < 80), starting from red. Made by assets/colors/gen.py with /usr/bin/python3.",
    "colors": cols,
}
s = json.dumps(doc, separators=(",", ":")).replace("],[", "],\n[")
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "labels.json"), "w") as f:
    f.write(s + "\n")
