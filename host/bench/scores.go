package bench

// Published is one challenge's published results on its primary metric (ReX-MLE's
// leaderboard page and the AMID paper, arXiv 2607.10522): the best of the three general ML
// agents (AIDE, ML-Master, R&D-Agent; NaN-free: a FAIL counts as no score), the human
// reference and the published AMID system.
type Published struct {
	Metric    string
	BestAgent float64
	Agent     string // which agent
	Human     float64
	AMID      float64
}

// published holds the table of the reference rexmle-scores.md, by challenge id.
var published = map[string]Published{
	"isles22":             {"Dice", 0.04, "AIDE", 0.79, 0.71},
	"neurips-cellseg":     {"F1", 0.36, "R&D-Agent", 0.88, 0.90},
	"panther-task1":       {"Dice", 0.33, "AIDE", 0.73, 0.42},
	"panther-task2":       {"Dice", 0.28, "R&D-Agent", 0.53, 0.31},
	"puma-track1-task1":   {"Dice", 0.00, "ML-Master", 0.78, 0.56},
	"puma-track2-task1":   {"Dice", 0.00, "AIDE", 0.78, 0.56},
	"seg_a":               {"Dice", 0.02, "AIDE", 0.92, 0.91},
	"topbrain-track1":     {"Mean Dice", 0.26, "ML-Master", 0.79, 0.59},
	"topbrain-track2":     {"Mean Dice", 0.50, "R&D-Agent", 0.81, 0.64},
	"topcow-track1-task1": {"Mean Dice", 0.49, "R&D-Agent", 0.87, 0.63},
	"topcow-track2-task1": {"Mean Dice", 0.73, "R&D-Agent", 0.88, 0.76},
	"dentex":              {"AP", 0.09, "AIDE", 0.40, 0.49},
	"puma-track1-task2":   {"F1", 0.08, "ML-Master", 0.66, 0.54},
	"puma-track2-task2":   {"F1", 0.01, "R&D-Agent", 0.27, 0.28},
	"topcow-track1-task2": {"IoU", 0.70, "R&D-Agent", 0.79, 0.71},
	"topcow-track2-task2": {"IoU", 0.69, "ML-Master", 0.85, 0.74},
	"topcow-track1-task3": {"Accuracy", 0.33, "AIDE", 0.73, 0.33},
	"topcow-track2-task3": {"Accuracy", 0.33, "AIDE", 0.89, 0.46},
	"ldct-iqa":            {"Score", 2.66, "R&D-Agent", 2.74, 2.74},
	"usenhance":           {"LNCC", 0.13, "ML-Master", 0.91, 0.19},
}

// PublishedScores returns the published results of challenge id.
func PublishedScores(id string) (Published, bool) {
	p, ok := published[id]
	return p, ok
}
