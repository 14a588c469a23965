package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"amid/assets/realdata"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// mosaicTile is the side of one tile of a mosaic, in pixels: four tiles make a 96×96
// image, small enough for a run of seconds.
const mosaicTile = 48

// mosaicSources are the real scans a mosaic's tiles are cut from, by modality, each with
// the slices (or frames) used: those of modalitySlices.
var mosaicSources = map[string][]realSlice{}

func init() {
	for _, s := range modalitySlices {
		mosaicSources[s.modality] = append(mosaicSources[s.modality], s)
	}
}

// tile is slice z of the scan at src (its channels averaged, its range spread over 0–255)
// resampled to mosaicTile² by the nearest pixel.
func tile(t *testing.T, cache map[string]*volume.Volume, src string, z int) []float64 {
	t.Helper()
	v, ok := cache[src]
	if !ok {
		var err error
		if v, err = imageio.Read(realdata.Path(t, src)); err != nil {
			t.Fatal(err)
		}
		cache[src] = v
	}
	w, h := v.Dims[0], v.Dims[1]
	out := make([]float64, mosaicTile*mosaicTile)
	lo, hi := math.Inf(1), math.Inf(-1)
	for y := range mosaicTile {
		for x := range mosaicTile {
			var s float64
			for c := range v.Dims[3] {
				s += v.At(x*w/mosaicTile, y*h/mosaicTile, z, c)
			}
			s /= float64(v.Dims[3])
			out[y*mosaicTile+x] = s
			lo, hi = min(lo, s), max(hi, s)
		}
	}
	for i, s := range out {
		out[i] = 0
		if hi > lo {
			out[i] = math.Round(255 * (s - lo) / (hi - lo))
		}
	}
	return out
}

// mosaic is one case of the multi-label dataset: a 2×2 mosaic whose tiles are real slices
// of CT, MR or ultrasound scans, or left black; its findings are the modalities of the
// files its tiles were cut from.
type mosaic struct {
	id    string
	tiles [4]string // the modality of each tile, "" for a black one
	test  bool
}

// findings are the modalities of m's tiles, in the order of modalities.
func (m mosaic) findings() []string {
	var out []string
	for _, f := range modalities {
		if slices.Contains(m.tiles[:], f) {
			out = append(out, f)
		}
	}
	return out
}

// mosaics are 20 training and 4 test cases, each tile black with chance 1/4 and otherwise
// of a modality drawn evenly, from a fixed seed: each modality is then in about
// 1 − (1 − 1/4)^4 ≈ 68 % of the cases (each tile shows it with chance 3/4 · 1/3), so both
// folds of 10 hold cases with and without each finding.
func mosaics() []mosaic {
	r := rand.New(rand.NewPCG(31, 3))
	var out []mosaic
	for i := range 24 {
		m := mosaic{id: fmt.Sprintf("m%02d", i+1), test: i >= 20}
		for k := range m.tiles {
			if r.IntN(4) > 0 {
				m.tiles[k] = modalities[r.IntN(len(modalities))]
			}
		}
		out = append(out, m)
	}
	return out
}

// writeMosaic writes m as an 8-bit grey PNG, each tile a slice of its modality's scans
// picked in turn.
func writeMosaic(t *testing.T, cache map[string]*volume.Volume, m mosaic, n int, dst string) {
	t.Helper()
	side := 2 * mosaicTile
	out, err := volume.New(volume.Uint8, [4]int{side, side, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	for k, mod := range m.tiles {
		if mod == "" {
			continue
		}
		src := mosaicSources[mod][(n+k)%len(mosaicSources[mod])]
		px := tile(t, cache, src.src, src.z)
		ox, oy := (k%2)*mosaicTile, (k/2)*mosaicTile
		for y := range mosaicTile {
			for x := range mosaicTile {
				out.SetIndex((oy+y)*side+ox+x, px[y*mosaicTile+x])
			}
		}
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := imageio.Write(dst, out); err != nil {
		t.Fatal(err)
	}
}

// multiLayout is a multi-label dataset's label layout: its task's train label and the
// table it writes from the mosaics' findings.
type multiLayout struct {
	name  string
	label string
	table func(ms []mosaic) []string
	bad   badInput
}

func multiLayouts() []multiLayout {
	return []multiLayout{
		{
			name:  "finding names",
			label: `{path: "Data_Entry.csv", format: csv, id_column: Image Index, value_column: Finding Labels}`,
			table: func(ms []mosaic) []string {
				out := []string{"Image Index,Finding Labels"}
				for _, m := range ms {
					f := strings.Join(m.findings(), "|")
					if f == "" {
						f = "No Finding"
					}
					out = append(out, m.id+".png,"+f)
				}
				return out
			},
			// m03 is the third row, line 4 of the file (the header is line 1).
			bad: badInput{func(dir string) {
				p := filepath.Join(dir, "Data_Entry.csv")
				b, _ := os.ReadFile(p)
				lines := strings.Split(string(b), "\n")
				lines[3] = "m03.png,CT|PET"
				_ = os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644)
			}, `Data_Entry.csv: unusable label: line 4 (id m03.png), column Finding Labels: findings "PET" is not one of its findings CT, MR, US`},
		},
		{
			// CheXpert's layout: a column a finding; the first training case's MR is
			// written −1 (uncertain) and left out of the loss and the metric.
			name:  "finding columns",
			label: `{path: "train.csv", format: csv, id_column: Path, columns: [CT, MR, US], uncertain: ignore}`,
			table: func(ms []mosaic) []string {
				out := []string{"Path,Sex,CT,MR,US"}
				for i, m := range ms {
					row := []string{m.id, "F"}
					for _, f := range modalities {
						v := ""
						if slices.Contains(m.findings(), f) {
							v = "1.0"
						} else if i%2 == 0 {
							v = "0.0" // blank on odd rows, as CheXpert leaves unmentioned findings
						}
						if i == 0 && f == "MR" {
							v = "-1.0"
						}
						row = append(row, v)
					}
					out = append(out, strings.Join(row, ","))
				}
				return out
			},
			// m02 is the second row, line 3 of the file.
			bad: badInput{func(dir string) {
				p := filepath.Join(dir, "train.csv")
				b, _ := os.ReadFile(p)
				lines := strings.Split(string(b), "\n")
				f := strings.Split(lines[2], ",")
				f[3] = "2"
				lines[2] = strings.Join(f, ",")
				_ = os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644)
			}, `train.csv: unusable label: line 3 (id m02), column MR: "2" is not 1, 0, -1 (uncertain) or blank`},
		},
	}
}

// writeMulti writes the mosaic dataset in layout l into dir with its task.yaml.
func writeMulti(t *testing.T, l multiLayout, dir string) string {
	t.Helper()
	cache := map[string]*volume.Volume{}
	var train []mosaic
	for n, m := range mosaics() {
		dst := filepath.Join(dir, "images", m.id+".png")
		if m.test {
			dst = filepath.Join(dir, "test", m.id+".png")
		} else {
			train = append(train, m)
		}
		writeMosaic(t, cache, m, n, dst)
	}
	name := strings.Fields(strings.Split(l.label, "path: ")[1])[0]
	writeLines(t, filepath.Join(dir, strings.Trim(name, `",`)), l.table(train)...)
	path := filepath.Join(dir, "task.yaml")
	writeLines(t, path,
		"id: mosaic",
		"kind: classification",
		"dims: 2",
		"channels: [image]",
		"attributes: [{name: findings, classes: [CT, MR, US], multi_label: true}]",
		"data:",
		`  train: {images: ["images/{id}.png"], label: `+l.label+`}`,
		`  test: {images: ["test/{id}.png"]}`,
		"metric: {name: auroc}",
		"submission: {format: csv, id_column: image_id}",
	)
	return path
}

// TestMultiLabelLayouts runs `amid run` on a multi-label classification of real images
// (issue 31): 2×2 mosaics of real CT, MR and ultrasound slices from the real-image cache,
// some tiles black, whose findings are the modalities of the files the tiles were cut
// from (never a threshold on their pixels). Its labels come as NIH ChestX-ray14 keeps them
// ("|"-separated names, "No Finding") and as CheXpert does (a column a finding, 1, 0, −1
// under the ignore policy, blank). Each run ends in a package that `amid verify` accepts,
// its model card and the run's report listing each finding's validation AUROC, and a submission of the id and
// one probability a finding; each layout's bad input stops the run at prepare with one
// line naming the file, line and column.
func TestMultiLabelLayouts(t *testing.T) {
	endToEnd(t, "trains a multi-label classification in two layouts", cranium)
	installPlugin(t, "classification")
	for _, l := range multiLayouts() {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			run, _ := ownHome(t, "classification")
			dir := t.TempDir()
			path := writeMulti(t, l, dir)
			tk := loadTask(t, path)
			if want := []string{"image_id", "CT", "MR", "US"}; !slices.Equal(tk.Submission.Columns, want) {
				t.Errorf("submission columns %v, want %v", tk.Submission.Columns, want)
			}
			out := runToPackage(t, run, path)
			checkFindingCard(t, filepath.Join(out, "package"))
			rep, e, code := run(t, "report", out)
			if code != 0 {
				t.Fatalf("amid report: exit %d: %s", code, e)
			}
			for _, f := range modalities {
				if !strings.Contains(rep, " "+f+" (fold ") {
					t.Errorf("the report does not list finding %s's AUROC per fold:\n%s", f, rep)
				}
			}
			checkFindingTable(t, filepath.Join(out, "submission", "submission.csv"))
			bad := t.TempDir()
			writeMulti(t, l, bad)
			l.bad.spoil(bad)
			refusedAtPrepare(t, run, bad, l.bad.want)
		})
	}
}

// checkFindingCard checks that the package's model card gives the validation score as
// the mean AUROC over findings, with each finding's AUROC beside it.
func checkFindingCard(t *testing.T, pkg string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(pkg, "model_card.json"))
	if err != nil {
		t.Fatal(err)
	}
	var card struct {
		Scores []struct {
			Set      string             `json:"set"`
			Metric   string             `json:"metric"`
			Value    float64            `json:"value"`
			PerClass map[string]float64 `json:"per_class"`
		} `json:"quantitative_analysis"`
	}
	if err := json.Unmarshal(b, &card); err != nil {
		t.Fatal(err)
	}
	if len(card.Scores) == 0 || card.Scores[0].Metric != "auroc" {
		t.Fatalf("model card scores %+v, want the validation AUROC first", card.Scores)
	}
	v := card.Scores[0]
	// The card names Extra's "auroc_<finding>" with a space for the underscore.
	for _, f := range modalities {
		a, ok := v.PerClass["auroc "+f]
		if !ok || a < 0 || a > 1 {
			t.Errorf("model card: finding %s has AUROC %v (%v) in %v", f, a, ok, v.PerClass)
		}
	}
	md, err := os.ReadFile(filepath.Join(pkg, "model_card.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range modalities {
		if !strings.Contains(string(md), "auroc "+f) {
			t.Errorf("model_card.md does not list finding %s's AUROC", f)
		}
	}
	t.Logf("validation %s %.4f, per finding %v", v.Metric, v.Value, v.PerClass)
}

// checkFindingTable checks a multi-label submission: the id and one probability a
// finding for each test mosaic.
func checkFindingTable(t *testing.T, path string) {
	t.Helper()
	rows := readCSV(t, path)
	var test []string
	for _, m := range mosaics() {
		if m.test {
			test = append(test, m.id)
		}
	}
	if len(rows) != len(test)+1 || !slices.Equal(rows[0], []string{"image_id", "CT", "MR", "US"}) {
		t.Fatalf("%s: %v, want the header image_id,CT,MR,US and %d rows", path, rows, len(test))
	}
	for i, r := range rows[1:] {
		if r[0] != test[i] {
			t.Errorf("row %d: id %s, want %s", i+1, r[0], test[i])
		}
		for j, c := range r[1:] {
			if p, err := strconv.ParseFloat(c, 64); err != nil || p < 0 || p > 1 {
				t.Errorf("row %d: %s %q is not a probability", i+1, rows[0][j+1], c)
			}
		}
	}
	t.Logf("%s:\n%v", filepath.Base(path), rows)
}
