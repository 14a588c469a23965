package grade

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"amid/plugins/metrics"
)

func init() {
	Register("puma-track1-task2", GraderFunc(gradePUMAT1Nuclei))
	Register("puma-track2-task2", GraderFunc(gradePUMAT2Nuclei))
}

// gradePUMAT1Nuclei grades PUMA track 1 nuclei detection (rexmle.md §6.7): 3 classes
// (tumor, TILs, other), centroid distance < 15 px, each class's F1 averaged over all
// images, macro over the 3. Options.Official changes nothing here.
func gradePUMAT1Nuclei(ctx context.Context, subDir, ansDir string, _ Options) (*Result, error) {
	norm := func(raw any) (string, bool, error) {
		s, ok := raw.(string)
		if !ok {
			return "", false, fmt.Errorf("class name %v is not a string", raw)
		}
		return metrics.PUMAT1Class(s), true, nil
	}
	return gradePUMANuclei(ctx, "puma-track1-task2", subDir, ansDir, norm, metrics.PUMAT1Classes, metrics.PointsRuleOf("puma-track1-task2", false))
}

// gradePUMAT2Nuclei grades PUMA track 2 nuclei detection (rexmle.md §6.8): 10 classes. The
// ReX grader matches at distance ≤ 15 px and averages each class over the images where it
// occurs (PUMAPresentImages); with Options.Official the official evaluate.py rules apply
// instead: distance < 15 px and PUMAOfficial averaging.
func gradePUMAT2Nuclei(ctx context.Context, subDir, ansDir string, opt Options) (*Result, error) {
	norm := func(raw any) (string, bool, error) {
		s, ok := raw.(string)
		if !ok {
			return "", false, nil // str(x) of a non-string never names a class
		}
		c, ok := metrics.PUMAT2Class(s)
		return c, ok, nil
	}
	return gradePUMANuclei(ctx, "puma-track2-task2", subDir, ansDir, norm, metrics.PUMAT2Classes, metrics.PointsRuleOf("puma-track2-task2", opt.Official))
}

type pumaNorm func(raw any) (class string, keep bool, err error)

func gradePUMANuclei(ctx context.Context, id, subDir, ansDir string, norm pumaNorm, classes []string, rule metrics.PointsRule) (*Result, error) {
	at, ids, err := ReadAnswers(ansDir, "case_id", "label_path")
	if err != nil {
		return nil, err
	}
	gtPath := answerPaths(at, ids, "label_path", ansDir)
	var p Problems
	s := ReadSubmission(subDir, Spec{IDColumn: "case_id", FileColumns: []string{"predicted_nuclei_path"}}, ids, &p)
	if s == nil || !s.Table.Has("predicted_nuclei_path") || !s.Table.Has("case_id") {
		return Invalid(p.List()), nil
	}
	var gts, preds [][]metrics.Nucleus
	for _, cid := range ids {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if _, ok := s.Row[cid]; !ok || !fileExists(s.File(cid, "predicted_nuclei_path")) {
			continue
		}
		pred, err := pumaReadNuclei(s.File(cid, "predicted_nuclei_path"), norm)
		if err != nil {
			p.Addf("row %q: %s: %v.", cid, s.Value(cid, "predicted_nuclei_path"), err)
			continue
		}
		gt, err := pumaReadNuclei(gtPath[cid], norm)
		if err != nil {
			return nil, fmt.Errorf("grade: %s answers %s: %w", id, gtPath[cid], err)
		}
		gts, preds = append(gts, gt), append(preds, pred)
	}
	if !p.Empty() {
		return Invalid(p.List()), nil
	}
	macro, per := metrics.PointsF1(gts, preds, classes, metrics.PUMAMatchRadius, rule)
	m := map[string]float64{"f1": macro, "macro_f1": macro}
	for c, v := range per {
		m["f1_"+c] = v
	}
	return Finish(id, "f1", m)
}

// pumaReadNuclei reads a nuclei JSON as the PUMA graders do: {"polygons": [...]} or
// {"nuclei": [...]}; each item's class is "name" (or "class" when "name" is absent; null
// skips the item), its score "score", else "confidence", else 1; its centroid the mean of
// "path_points" (x, y of each point; fewer than 3 points skips the item) or "centroid".
func pumaReadNuclei(path string, norm pumaNorm) ([]metrics.Nucleus, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var top map[string]any
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	raw, ok := top["polygons"]
	if !ok {
		raw, ok = top["nuclei"]
	}
	if !ok {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, errors.New(`"polygons"/"nuclei" is not a list`)
	}
	var out []metrics.Nucleus
	for i, it := range list {
		obj, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("item %d is not an object", i)
		}
		rc, has := obj["name"]
		if !has {
			rc = obj["class"]
		}
		if rc == nil {
			continue
		}
		class, keep, err := norm(rc)
		if err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
		if !keep {
			continue
		}
		score := 1.0
		sv, has := obj["score"]
		if !has {
			sv, has = obj["confidence"]
		}
		if has {
			switch x := sv.(type) {
			case float64:
				score = x
			case bool:
				score = 0
				if x {
					score = 1
				}
			default:
				return nil, fmt.Errorf("item %d: score %v is not a number", i, sv)
			}
		}
		var cx, cy float64
		if pp, has := obj["path_points"]; has {
			pts, ok := pp.([]any)
			if !ok {
				return nil, fmt.Errorf("item %d: path_points is not a list", i)
			}
			if len(pts) < 3 {
				continue
			}
			for k, q := range pts {
				x, y, err := pumaXY(q)
				if err != nil {
					return nil, fmt.Errorf("item %d point %d: %w", i, k, err)
				}
				cx += x
				cy += y
			}
			cx /= float64(len(pts))
			cy /= float64(len(pts))
		} else if c, has := obj["centroid"]; has {
			if cx, cy, err = pumaXY(c); err != nil {
				return nil, fmt.Errorf("item %d centroid: %w", i, err)
			}
		} else {
			continue
		}
		out = append(out, metrics.Nucleus{Class: class, X: cx, Y: cy, Score: score})
	}
	return out, nil
}

func pumaXY(v any) (float64, float64, error) {
	a, ok := v.([]any)
	if !ok || len(a) < 2 {
		return 0, 0, errors.New("not a list of at least 2 numbers")
	}
	x, ok1 := a[0].(float64)
	y, ok2 := a[1].(float64)
	if !ok1 || !ok2 {
		return 0, 0, errors.New("coordinates are not numbers")
	}
	return x, y, nil
}
