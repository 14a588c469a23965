"""Writes golden.json: the correlation and balanced-accuracy cases of
host/metrics/testdata/golden_2d.json (computed there with scipy.stats.pearsonr, spearmanr,
kendalltau and sklearn's balanced_accuracy_score by golden_2d.py), copied so that the
plugins' own statistics are checked against the same references without importing the host.
Run from this folder: /usr/bin/python3 extract.py"""
import json

with open("../../../../host/metrics/testdata/golden_2d.json") as f:
    g = json.load(f)
out = {"source": "host/metrics/testdata/golden_2d.json (" + g.get("command", "") + ")",
       "versions": g.get("versions", {}), "corr": g["corr"], "balanced_accuracy": g["balanced_accuracy"]}
with open("golden.json", "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
