package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"sort"
	"strings"
)

// Files of the model card (see Card).
const (
	FileCard     = "model_card.json"
	FileCardText = "model_card.md"
)

// Card is the package's model card, model_card.json, with model_card.md its text. Its
// sections follow MHub's meta.json (intended use, training data, evaluation data,
// quantitative analysis, limitations); the software section is IEC 62304's list of software
// of unknown provenance (SOUP) the model runs on. It holds statistics only: no case id,
// path, pixel or DICOM tag.
type Card struct {
	Model       CardModel   `json:"model"`
	IntendedUse string      `json:"intended_use"`
	Training    CardData    `json:"training_data"`
	Evaluation  CardEval    `json:"evaluation_data"`
	Scores      []CardScore `json:"quantitative_analysis"`
	Compute     CardCompute `json:"compute"`
	Software    []Component `json:"software"`
	Limitations []string    `json:"limitations"`
}

// CardModel names the model.
type CardModel struct {
	Task    string `json:"task"`
	Title   string `json:"title"`
	Kind    string `json:"kind"`
	Dims    int    `json:"dims"`
	Lane    string `json:"lane"`
	Mode    string `json:"final_model"` // fold model, fold-ensemble, all-data, union
	Plugin  string `json:"plugin"`
	Version string `json:"plugin_version"`
	AMID    string `json:"amid_version"`
}

// CardData describes the training data (from the fingerprint).
type CardData struct {
	Cases      int           `json:"cases"`
	Patients   int           `json:"patients"`
	Modality   string        `json:"modality"`
	Channels   int           `json:"channels"`
	Classes    []string      `json:"classes,omitempty"`
	MedianSize [3]int        `json:"median_shape_zyx"`
	Spacing    [2][3]float64 `json:"spacing_range_zyx_mm"`  // least and most along Z, Y, X
	Intensity  [3]float64    `json:"intensity_percentiles"` // 0.5, 50, 99.5
	// CasesWithClass is how many training cases hold each class, in Classes' order.
	CasesWithClass []int `json:"cases_with_class,omitempty"`
}

// CardEval describes the data the model was judged on.
type CardEval struct {
	Folds      int    `json:"folds"`
	SplitHash  string `json:"split_sha256,omitempty"` // the locked folds' hash
	Validation string `json:"validation"`
	TestCases  int    `json:"test_cases"`
	Test       string `json:"test"`
}

// CardScore is one score with its 95 % bootstrap confidence interval over cases.
type CardScore struct {
	Set    string  `json:"set"` // "validation (out of fold)" or "test"
	Metric string  `json:"metric"`
	Value  float64 `json:"value"`
	Low    float64 `json:"ci95_low"`
	High   float64 `json:"ci95_high"`
	Cases  int     `json:"cases"`
	// Interval says how the interval was found, or why there is none.
	Interval string `json:"interval"`
	// PerClass are the class scores the metric reports beside its value.
	PerClass map[string]float64 `json:"per_class,omitempty"`
	// Undefined says why the score has no value (Value is then 0).
	Undefined string `json:"undefined,omitempty"`
}

// CardCompute says what trained the weights and computed the package's predictions.
type CardCompute struct {
	Trained   []string `json:"trained_on"`
	Predicted string   `json:"predicted_with"`
}

// Component is one piece of software the model runs on, with its version.
type Component struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Role    string `json:"role"`
}

// BootstrapRounds is how many resamples a confidence interval draws.
const BootstrapRounds = 2000

// Bootstrap is the 95 % percentile-bootstrap confidence interval of the mean of values:
// BootstrapRounds resamples of len(values) cases with replacement, from a fixed seed so
// that a package is written the same way twice. Fewer than two values have no interval
// (ok false).
func Bootstrap(values []float64) (low, high float64, ok bool) {
	n := len(values)
	if n < 2 {
		return 0, 0, false
	}
	r := rand.New(rand.NewPCG(1, 2))
	means := make([]float64, BootstrapRounds)
	for i := range means {
		var s float64
		for range n {
			s += values[r.IntN(n)]
		}
		means[i] = s / float64(n)
	}
	sort.Float64s(means)
	at := func(q float64) float64 { return means[int(math.Round(q*float64(BootstrapRounds-1)))] }
	return at(0.025), at(0.975), true
}

// Score is the card's score of per-case values (their mean, and its interval).
func Score(set, metric string, value float64, perCase []float64) CardScore {
	s := CardScore{Set: set, Metric: metric, Value: value, Cases: len(perCase)}
	if lo, hi, ok := Bootstrap(perCase); ok {
		s.Low, s.High = lo, hi
		s.Interval = fmt.Sprintf("95 %% percentile bootstrap over %d cases (%d resamples) of the mean per-case %s", len(perCase), BootstrapRounds, metric)
	} else {
		s.Low, s.High = value, value
		s.Interval = fmt.Sprintf("none: the %s is not a mean over 2 or more cases", metric)
	}
	return s
}

// Components lists the software the host was built from: Go and each module with its
// version (from the binary's build information; a test binary records none, and the list
// then says so), then extra (the plugin, the BLAS).
func Components(extra ...Component) []Component {
	var out []Component
	if bi, ok := debug.ReadBuildInfo(); ok {
		out = append(out, Component{Name: "Go", Version: bi.GoVersion, Role: "the language runtime of the host and the plugins"})
		if len(bi.Deps) == 0 {
			out = append(out, Component{Name: "Go modules", Version: "not recorded", Role: "this binary records no module list (a test binary); go.mod and go.sum name them"})
		}
		for _, d := range bi.Deps {
			v := d.Version
			if d.Replace != nil {
				v = d.Replace.Version
			}
			out = append(out, Component{Name: d.Path, Version: v, Role: "a Go module the host is built with"})
		}
	}
	return append(out, extra...)
}

// ReadCard reads the model card of a package, nil when it has none (older packages).
func ReadCard(fsys fs.FS) (*Card, error) {
	b, err := fs.ReadFile(fsys, FileCard)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var c Card
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", FileCard, err)
	}
	return &c, nil
}

// RenderCard writes the card as Markdown.
func RenderCard(c *Card) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	m := c.Model
	w("# Model card: %s\n\n", orDash(m.Title))
	w("Task `%s` (%s, %d-D); lane `%s`, %s; plugin %s %s; AMID %s.\n\n", m.Task, m.Kind, m.Dims, m.Lane, m.Mode, m.Plugin, orDash(m.Version), m.AMID)
	w("## Intended use\n\n%s\n\n", c.IntendedUse)
	t := c.Training
	w("## Training data\n\n%d cases of %d patients; modality %s; %d channel(s).\n\n", t.Cases, t.Patients, orDash(t.Modality), t.Channels)
	w("- median shape (Z, Y, X): %d × %d × %d\n", t.MedianSize[0], t.MedianSize[1], t.MedianSize[2])
	w("- spacing (Z, Y, X), least to most: %s to %s mm\n", Triple(t.Spacing[0]), Triple(t.Spacing[1]))
	w("- intensity percentiles 0.5 / 50 / 99.5: %.4g / %.4g / %.4g\n", t.Intensity[0], t.Intensity[1], t.Intensity[2])
	for i, cl := range t.Classes {
		if i < len(t.CasesWithClass) {
			w("- class %s: in %d of %d training cases\n", cl, t.CasesWithClass[i], t.Cases)
		}
	}
	e := c.Evaluation
	w("\n## Evaluation data\n\n%s %s\n\n", e.Validation, e.Test)
	w("## Quantitative analysis\n\n| set | metric | value | 95 %% CI | cases |\n|---|---|---|---|---|\n")
	for _, s := range c.Scores {
		if s.Undefined != "" {
			w("| %s | %s | undefined: %s | | %d |\n", s.Set, s.Metric, cell(s.Undefined), s.Cases)
			continue
		}
		ci := fmt.Sprintf("%.4f – %.4f", s.Low, s.High)
		if s.Low == s.High && s.Low == s.Value {
			ci = "none"
		}
		w("| %s | %s | %.4f | %s | %d |\n", s.Set, s.Metric, s.Value, ci, s.Cases)
	}
	for _, s := range c.Scores {
		if len(s.PerClass) > 0 {
			w("\nPer class (%s):", s.Set)
			for _, k := range sortedKeys(s.PerClass) {
				w(" %s %.4f;", k, s.PerClass[k])
			}
			w("\n")
		}
	}
	w("\nIntervals: %s\n\n", firstInterval(c.Scores))
	w("## Compute\n\nTrained on %s; the package's predictions computed with %s.\n\n", strings.Join(c.Compute.Trained, "; "), orDash(c.Compute.Predicted))
	w("## Limitations\n\n")
	for _, l := range c.Limitations {
		w("- %s\n", l)
	}
	w("\n## Software (SOUP)\n\n| component | version | role |\n|---|---|---|\n")
	for _, s := range c.Software {
		w("| %s | %s | %s |\n", cell(s.Name), cell(s.Version), cell(s.Role))
	}
	return b.String()
}

func firstInterval(s []CardScore) string {
	for _, x := range s {
		if x.Interval != "" && x.Undefined == "" {
			return x.Interval + "."
		}
	}
	return "none."
}

// Triple writes three values as "0.8 × 0.8 × 4" (a spacing, a shape).
func Triple(v [3]float64) string { return fmt.Sprintf("%.3g × %.3g × %.3g", v[0], v[1], v[2]) }
