#!/usr/bin/python3
"""Reference values for the clinical classification metrics of amid/plugins/metrics.

Run from this folder with Debian's python3 (python3-numpy, python3-sklearn):

    /usr/bin/python3 clinical_ref.py [OUT]

It writes clinical_ref.json (or OUT): deterministic generated cases, inputs included, and
what scikit-learn computes for them: roc_auc_score (binary, multi_class="ovr" macro, and
multi-label macro), roc_curve (Youden's J, a target sensitivity), recall_score,
f1_score(average="macro"), cohen_kappa_score(weights="quadratic"), brier_score_loss, and
numpy.percentile. scikit-learn has no expected calibration error: it is written out below
with numpy, on 10 equal-width bins of the top-label confidence (Guo et al. 2017). A value
scikit-learn does not define (it raises, or returns NaN) is null, with the reason it gives.
The Go test TestClinicalReference compares with this file; under CI=true
TestClinicalReferenceRegenerates runs this script again and compares its output with it.
"""
import json
import sys
import warnings

import numpy as np
import sklearn
from sklearn.metrics import (brier_score_loss, cohen_kappa_score, f1_score, recall_score,
                             roc_auc_score, roc_curve)

warnings.simplefilter("ignore")
rng = np.random.RandomState(20261206)
out = {
    "command": "/usr/bin/python3 clinical_ref.py (in amid/plugins/metrics/testdata)",
    "versions": {"python": sys.version.split()[0], "numpy": np.__version__, "sklearn": sklearn.__version__},
}


def fl(a):
    return [float(x) for x in np.asarray(a).ravel()]


def try_value(f):
    """f()'s value, or None with the reason scikit-learn gives (an exception or NaN)."""
    try:
        v = float(f())
    except ValueError as e:
        return None, str(e)
    if not np.isfinite(v):
        return None, "not finite: %r" % v
    return v, ""


# Binary cases: continuous scores, heavy ties, one value for all, perfect and inverted
# rankings, two cases, and folds without positives or without negatives.
binary = []


def add_binary(name, y, s, test_y=None, test_s=None):
    y = np.asarray(y, dtype=int)
    s = np.asarray(s, dtype=float)
    auc, why = try_value(lambda: roc_auc_score(y, s))
    c = {"name": name, "y": y.tolist(), "score": fl(s), "auroc": auc, "auroc_undefined": why}
    if 0 < y.sum() < len(y):
        fpr, tpr, thr = roc_curve(y, s)
        j = int(np.argmax(tpr - fpr))
        t = None if j == 0 else float(thr[j])  # point 0: no case positive (+Inf)
        c["youden"] = t
        pred = s >= (np.inf if t is None else t)
        c["youden_sens"] = float(recall_score(y, pred))
        c["youden_spec"] = float(recall_score(y, pred, pos_label=0))
        fpr, tpr, thr = roc_curve(y, s, drop_intermediate=False)
        c["targets"] = []
        for target in (0.5, 0.8, 0.9, 0.95, 1.0):
            k = int(np.argmax(tpr >= target))
            pred = s >= thr[k] if k > 0 else np.zeros(len(s), bool)
            c["targets"].append({"target": target, "threshold": None if k == 0 else float(thr[k]),
                                 "sens": float(recall_score(y, pred)), "spec": float(recall_score(y, pred, pos_label=0))})
        if test_y is not None:
            ty, ts = np.asarray(test_y, dtype=int), np.asarray(test_s, dtype=float)
            pred = ts >= (np.inf if t is None else t)
            c["test"] = {"y": ty.tolist(), "score": fl(ts),
                         "sens": float(recall_score(ty, pred)), "spec": float(recall_score(ty, pred, pos_label=0))}
    binary.append(c)


y = rng.randint(0, 2, 50)
add_binary("continuous", y, rng.rand(50) + 0.3 * y, rng.randint(0, 2, 40), rng.rand(40) + 0.3 * rng.randint(0, 2, 40))
y = rng.randint(0, 2, 200)
add_binary("ties", y, np.round(rng.rand(200) * 0.7 + 0.3 * y, 1))
y = rng.randint(0, 2, 120)
add_binary("few-values", y, rng.randint(0, 4, 120) / 4 + 0.25 * y * rng.randint(0, 2, 120))
add_binary("one-value", [0, 1, 1, 0, 1], [0.5] * 5)
add_binary("perfect", [0, 0, 1, 1, 1], [0.1, 0.2, 0.6, 0.7, 0.9])
add_binary("inverted", [1, 1, 0, 0, 0], [0.1, 0.2, 0.6, 0.7, 0.9])
add_binary("two-cases", [1, 0], [0.4, 0.4])
add_binary("no-positives", [0, 0, 0, 0], [0.1, 0.4, 0.2, 0.9])
add_binary("no-negatives", [1, 1, 1], [0.1, 0.4, 0.2])
out["binary"] = binary

# Multi-class one-vs-rest AUROC (rows summing to 1), with a fold that lacks a class.
multi = []


def add_multi(name, y, p):
    y, p = np.asarray(y), np.asarray(p)
    k = p.shape[1]
    per, why = [], []
    for c in range(k):
        v, w = try_value(lambda: roc_auc_score((y == c).astype(int), p[:, c]))
        per.append(v)
        why.append(w)
    defined = [v for v in per if v is not None]
    macro, mwhy = try_value(lambda: roc_auc_score(y, p, multi_class="ovr", average="macro", labels=list(range(k))))
    if macro is None and defined:
        macro = float(np.mean(defined))  # scikit-learn raises: the mean over the classes that have one
    multi.append({"name": name, "y": y.tolist(), "prob": [fl(r) for r in p], "per_class": per, "per_class_undefined": why,
                  "macro": macro, "sklearn_macro_undefined": mwhy})


p = rng.dirichlet([1, 1, 1], 60)
add_multi("dirichlet", np.array([rng.choice(3, p=r) for r in p]), p)
rows = np.array([[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5], [0.4, 0.4, 0.2], [0.2, 0.4, 0.4]])
p = rows[rng.randint(0, 5, 80)]
add_multi("tied-rows", rng.randint(0, 3, 80), p)
p = rng.dirichlet([2, 2, 2, 2], 30)
add_multi("class-3-absent", rng.randint(0, 3, 30), p)
out["multiclass"] = multi

# Multi-label mean AUROC over findings, one finding absent from every case.
ml = []
Y = (rng.rand(70, 4) < [0.3, 0.5, 0.1, 0.7]).astype(int)
P = np.clip(0.35 * Y + rng.rand(70, 4) * 0.65, 0, 1)
v, why = try_value(lambda: roc_auc_score(Y, P, average="macro"))
ml.append({"name": "findings", "y": Y.tolist(), "prob": [fl(r) for r in P], "mean": v, "mean_undefined": why,
           "per_finding": [roc_auc_score(Y[:, f], P[:, f]) for f in range(4)]})
Y2 = Y.copy()
Y2[:, 2] = 0
per = []
for f in range(4):
    per.append(try_value(lambda: roc_auc_score(Y2[:, f], P[:, f]))[0])
ml.append({"name": "finding-2-absent", "y": Y2.tolist(), "prob": [fl(r) for r in P],
           "mean": float(np.mean([x for x in per if x is not None])),
           "mean_undefined": try_value(lambda: roc_auc_score(Y2, P, average="macro"))[1], "per_finding": per})
out["multilabel"] = ml

# Macro F1 (labels present in either), quadratic kappa on ordinal grades 0…4.
f1 = []
for name, yt, yp in [("random", rng.randint(0, 4, 100), rng.randint(0, 4, 100)),
                     ("pred-only-class", rng.randint(0, 3, 50), rng.randint(0, 4, 50)),
                     ("perfect", [0, 1, 2, 2, 1], [0, 1, 2, 2, 1]),
                     ("one-class", [1, 1, 1], [1, 1, 1])]:
    f1.append({"name": name, "y": list(map(int, yt)), "pred": list(map(int, yp)),
               "value": float(f1_score(yt, yp, average="macro"))})
out["f1_macro"] = f1

kappa = []
g = rng.randint(0, 5, 120)
for name, yt, yp in [("correlated", g, np.clip(g + rng.randint(-1, 2, 120), 0, 4)),
                     ("random", rng.randint(0, 5, 60), rng.randint(0, 5, 60)),
                     ("grade-4-absent", rng.randint(0, 4, 40), rng.randint(0, 4, 40)),
                     ("one-grade", [2, 2, 2, 2], [2, 2, 2, 2]),
                     ("disagree", [0, 4, 0, 4], [4, 0, 4, 0])]:
    v, why = try_value(lambda: cohen_kappa_score(yt, yp, labels=list(range(5)), weights="quadratic"))
    kappa.append({"name": name, "y": list(map(int, yt)), "pred": list(map(int, yp)), "k": 5, "value": v, "undefined": why})
out["kappa_quadratic"] = kappa


# Brier score and ECE.
def ece(y, p, bins=10):
    conf, hit = p.max(axis=1), (p.argmax(axis=1) == y).astype(float)
    edges = np.arange(bins + 1) / bins
    b = np.digitize(conf, edges[1:-1], right=True)  # edges[b] < conf <= edges[b+1]
    e = 0.0
    for k in range(bins):
        m = b == k
        if m.any():
            e += m.sum() / len(y) * abs(hit[m].mean() - conf[m].mean())
    return e


cal = []
for name, yy, pp in [("binary", rng.randint(0, 2, 90), None), ("three-class", rng.randint(0, 3, 75), None),
                     ("edges", [0, 1, 2, 0, 1, 2, 0],
                      [[0.3, 0.3, 0.4], [0.5, 0.25, 0.25], [0.7, 0.2, 0.1], [1.0, 0.0, 0.0], [0.4, 0.4, 0.2],
                       [0.1, 0.1, 0.8], [0.6, 0.3, 0.1]])]:
    yy = np.asarray(yy)
    if pp is None:
        k = int(yy.max()) + 1
        pp = rng.dirichlet([1] * k, len(yy))
        pp[np.arange(len(yy)), yy] += 0.5  # better than chance, not calibrated
        pp /= pp.sum(axis=1, keepdims=True)
    pp = np.asarray(pp, dtype=float)
    k = pp.shape[1]
    if k == 2:
        brier = float(brier_score_loss(yy, pp[:, 1], pos_label=1))
    else:
        brier = sum(float(brier_score_loss((yy == c).astype(int), pp[:, c], pos_label=1)) for c in range(k))
    cal.append({"name": name, "y": yy.tolist(), "prob": [fl(r) for r in pp], "brier": brier, "ece": float(ece(yy, pp))})
out["calibration"] = cal

# numpy.percentile (linear) at the bootstrap's 2.5 and 97.5.
pct = []
for n in (1, 2, 3, 7, 40, 1000):
    v = np.sort(rng.rand(n))
    pct.append({"sorted": fl(v), "p2_5": float(np.percentile(v, 2.5)), "p97_5": float(np.percentile(v, 97.5))})
out["percentile"] = pct

path = sys.argv[1] if len(sys.argv) > 1 else "clinical_ref.json"
with open(path, "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
