package grade

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"amid/host/yamldoc"
	"amid/plugins/metrics"
)

func init() {
	Register("topcow-track1-task3", topcowClsGrader("topcow-track1-task3"))
	Register("topcow-track2-task3", topcowClsGrader("topcow-track2-task3"))
}

var (
	topcowAntKeys = []string{"L-A1", "Acom", "3rd-A2", "R-A1"}
	topcowPosKeys = []string{"L-Pcom", "L-P1", "R-P1", "R-Pcom"}
)

// topcowClsGrader grades TopCoW graph classification (rexmle.md §6.11 Cls):
// submission.csv image_id,predicted_edges_path naming a JSON (or YAML)
// {"anterior":{"L-A1","Acom","3rd-A2","R-A1"},"posterior":{"L-Pcom","L-P1","R-P1","R-Pcom"}}
// with exactly those keys and values 0 or 1; answers test_labels.csv image_id,label_path
// (YAML edge lists). Each 4-value vector becomes the variant string
// "Var_<Ant|Pos>_" + the values as Python prints them joined by "_", and anterior_acc and
// posterior_acc are balanced accuracies over the variant classes. A leading "./" or
// "working/" of a path is dropped, as the grader does.
func topcowClsGrader(id string) Grader {
	return GraderFunc(func(ctx context.Context, subDir, ansDir string, _ Options) (*Result, error) {
		at, ids, err := ReadAnswers(ansDir, "image_id", "label_path")
		if err != nil {
			return nil, err
		}
		gtPath := answerPaths(at, ids, "label_path", ansDir)
		var p Problems
		col := "predicted_edges_path"
		s := ReadSubmission(subDir, Spec{IDColumn: "image_id"}, ids, &p)
		if s == nil || !s.Table.Has("image_id") {
			return Invalid(p.List()), nil
		}
		if !s.Table.Has(col) {
			p.Addf("%s has no column %q.", filepath.Join(subDir, SubmissionCSV), col)
			return Invalid(p.List()), nil
		}
		var antT, antP, posT, posP []string
		for _, cid := range ids {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if _, ok := s.Row[cid]; !ok {
				continue
			}
			rel := strings.TrimPrefix(s.Value(cid, col), "./")
			rel = strings.TrimPrefix(rel, "working/")
			if !checkRelPath(cid, col, rel, &p) {
				continue
			}
			path := filepath.Join(subDir, filepath.FromSlash(rel))
			if !fileExists(path) {
				p.Addf("row %q: predicted edges %s do not exist.", cid, rel)
				continue
			}
			pa, pp, err := readEdges(path)
			if err != nil {
				p.Addf("row %q: %v.", cid, err)
				continue
			}
			ga, gp, err := readEdges(gtPath[cid])
			if err != nil {
				return nil, fmt.Errorf("grade: %s answers: %w", id, err)
			}
			antT, antP = append(antT, "Var_Ant_"+ga), append(antP, "Var_Ant_"+pa)
			posT, posP = append(posT, "Var_Pos_"+gp), append(posP, "Var_Pos_"+pp)
		}
		if !p.Empty() {
			return Invalid(p.List()), nil
		}
		return Finish(id, "anterior_acc", map[string]float64{
			"anterior_acc":  metrics.BalancedAccuracy(antT, antP),
			"posterior_acc": metrics.BalancedAccuracy(posT, posP),
		})
	})
}

// readEdges reads an edge list and returns the anterior and posterior values joined by
// "_" as Python's "_".join(map(str, ...)) renders them. JSON is validated as the grader
// validates it (exact keys, values equal to 0 or 1, so true and 1.0 pass and print as
// "True" and "1.0"); YAML is read as yaml.safe_load reads it, without validation.
func readEdges(path string) (ant, pos string, err error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", "", err
	}
	if int64(len(raw)) > MaxCSVBytes {
		return "", "", fmt.Errorf("%s is %d bytes, too large for an edge list", path, len(raw))
	}
	low := strings.ToLower(path)
	var doc map[string]map[string]any
	switch {
	case strings.HasSuffix(low, ".json"):
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if err := d.Decode(&doc); err != nil {
			return "", "", fmt.Errorf("%s is not an edge-list JSON object: %w", path, err)
		}
		if err := edgesCheck(path, doc); err != nil {
			return "", "", err
		}
	case strings.HasSuffix(low, ".yml"), strings.HasSuffix(low, ".yaml"):
		if err := yamldoc.Unmarshal(raw, &doc); err != nil {
			return "", "", fmt.Errorf("%s is not an edge-list YAML mapping: %w", path, err)
		}
	default:
		return "", "", fmt.Errorf("%s: edge lists are .yml, .yaml or .json", path)
	}
	a, err := edgesJoin(path, doc["anterior"], topcowAntKeys)
	if err != nil {
		return "", "", err
	}
	b, err := edgesJoin(path, doc["posterior"], topcowPosKeys)
	if err != nil {
		return "", "", err
	}
	return a, b, nil
}

func edgesCheck(path string, doc map[string]map[string]any) error {
	if len(doc) != 2 || doc["anterior"] == nil || doc["posterior"] == nil {
		return fmt.Errorf("%s must have exactly the keys anterior and posterior", path)
	}
	for region, keys := range map[string][]string{"anterior": topcowAntKeys, "posterior": topcowPosKeys} {
		m := doc[region]
		if len(m) != len(keys) {
			return fmt.Errorf("%s: %s must have exactly the keys %s", path, region, strings.Join(keys, ", "))
		}
		for _, k := range keys {
			v, ok := m[k]
			if !ok {
				return fmt.Errorf("%s: %s must have exactly the keys %s", path, region, strings.Join(keys, ", "))
			}
			if f, ok := edgesNumber(v); !ok || (f != 0 && f != 1) {
				return fmt.Errorf("%s: %s %s is %v; edge values are 0 or 1", path, region, k, v)
			}
		}
	}
	return nil
}

// edgesNumber is the numeric value Python compares with 0 and 1 (bools are 0/1).
func edgesNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case uint64:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// edgesJoin renders the values of keys in order as str() does.
func edgesJoin(path string, m map[string]any, keys []string) (string, error) {
	parts := make([]string, len(keys))
	for i, k := range keys {
		v, ok := m[k]
		if !ok {
			return "", fmt.Errorf("%s has no edge %q", path, k)
		}
		switch x := v.(type) {
		case bool:
			parts[i] = map[bool]string{true: "True", false: "False"}[x]
		case json.Number:
			s := string(x)
			if strings.ContainsAny(s, ".eE") {
				f, _ := x.Float64()
				s = pyFloatRepr(f)
			}
			parts[i] = s
		case uint64:
			parts[i] = strconv.FormatUint(x, 10)
		case int64:
			parts[i] = strconv.FormatInt(x, 10)
		case float64:
			parts[i] = pyFloatRepr(x)
		case string:
			parts[i] = x
		default:
			parts[i] = fmt.Sprint(x)
		}
	}
	return strings.Join(parts, "_"), nil
}
