package export

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"amid/assets/fileio"
	"amid/viewer/measure"
)

// A reader's measurements on a case belong to the case's review: a run (or a predict run)
// keeps them as measurements/ID.json beside review.json, one Measurements record per case
// (the newest saved replaces the one before; every save is an audit entry, action
// review.measured), and a package carries them all as measurements.json with their table,
// measurements.csv, both listed by the manifest and recorded by the export entry.
const (
	// MeasurementsDir is the folder of a run's, or a predict run's, measurements.
	MeasurementsDir = "measurements"
	// FileMeasurements and FileMeasurementsTable are a package's measurements: every
	// case's record, and the table of them.
	FileMeasurements      = "measurements.json"
	FileMeasurementsTable = "measurements.csv"
	// ActionReviewMeasured is the audit action of a reader's saved measurements.
	ActionReviewMeasured = "review.measured"
)

// maxMeasurements bounds a measurements file read back (a case's, or a package's).
const maxMeasurements = 64 << 20

// Measurements are a reader's measurements on one case (amid/viewer/measure), as its
// review keeps them.
type Measurements struct {
	Case     string    `json:"case"`
	Reviewer string    `json:"reviewer,omitempty"`
	Time     time.Time `json:"time,omitzero"`
	// Unit is the unit of the image's values (UCUM: measure.UnitHU on CT), "" when unknown.
	Unit         string                `json:"unit,omitempty"`
	Measurements []measure.Measurement `json:"measurements"`
}

// Counts is how many measurements of each kind the record holds, as its audit entry
// records them (never a value or a coordinate of the image).
func (m *Measurements) Counts() map[string]int {
	out := map[string]int{}
	for _, x := range m.Measurements {
		out[string(x.Kind)]++
	}
	return out
}

// DecodeMeasurements reads a Measurements record: JSON whose measurements are well formed
// (measure.Unmarshal) and whose case can name a file. Nothing in b can make it panic.
func DecodeMeasurements(b []byte) (*Measurements, error) {
	var raw struct {
		Measurements
		List json.RawMessage `json:"measurements"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("the measurements are not a measurements record: %w", err)
	}
	if dec.More() {
		return nil, errors.New("the measurements record is followed by more data")
	}
	m := raw.Measurements
	if err := checkCaseName(m.Case); err != nil {
		return nil, err
	}
	m.Measurements = nil
	if len(raw.List) > 0 && string(raw.List) != "null" {
		ms, err := measure.Unmarshal(raw.List)
		if err != nil {
			return nil, fmt.Errorf("case %s's measurements: %w", m.Case, err)
		}
		m.Measurements = ms
	}
	if m.Measurements == nil {
		m.Measurements = []measure.Measurement{}
	}
	return &m, nil
}

// checkCaseName refuses a case ID that cannot name a file of its own in a folder.
func checkCaseName(id string) error {
	if id == "" || !filepath.IsLocal(id) || filepath.Base(id) != id || strings.ContainsAny(id, `/\`) {
		return fmt.Errorf("review: case %q cannot name a measurements file", id)
	}
	return nil
}

// MeasurementsPath is the path, relative to a run's folder, of case id's measurements.
func MeasurementsPath(id string) string { return filepath.Join(MeasurementsDir, id+".json") }

// SaveMeasurements writes m as measurements/ID.json in dir (a run's or a predict run's
// folder), atomically (a reader finds the old record or the new one), and returns its
// path relative to dir and the hex sha256 of what it wrote, for the audit entry.
func SaveMeasurements(dir string, m *Measurements) (rel, sum string, err error) {
	if err := checkCaseName(m.Case); err != nil {
		return "", "", err
	}
	for i := range m.Measurements {
		// The record must read back: what Unmarshal would refuse is refused now.
		if _, err := measure.Unmarshal(mustMarshal(m.Measurements[i : i+1])); err != nil {
			return "", "", fmt.Errorf("review: case %s's measurement %d: %w", m.Case, i+1, err)
		}
	}
	c := *m
	if c.Measurements == nil {
		c.Measurements = []measure.Measurement{}
	}
	b, err := json.MarshalIndent(&c, "", "  ")
	if err != nil {
		return "", "", fmt.Errorf("review: case %s's measurements: %w", m.Case, err)
	}
	b = append(b, '\n')
	rel = MeasurementsPath(m.Case)
	path := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", "", fmt.Errorf("review: case %s's measurements: %w", m.Case, err)
	}
	if err := fileio.Write(path, b); err != nil {
		return "", "", fmt.Errorf("review: case %s's measurements: %w", m.Case, err)
	}
	h := sha256.Sum256(b)
	return rel, hex.EncodeToString(h[:]), nil
}

func mustMarshal(ms []measure.Measurement) []byte {
	b, err := measure.Marshal(ms)
	if err != nil {
		return []byte("not JSON") // a value JSON cannot hold: Unmarshal refuses it
	}
	return b
}

// ReadMeasurements reads case id's measurements in dir (a run's or a predict run's
// folder): nil and no error when none were saved; a file that no longer reads is an
// error in one sentence naming it, which touches nothing else of the review.
func ReadMeasurements(dir, id string) (*Measurements, error) {
	if err := checkCaseName(id); err != nil {
		return nil, err
	}
	rel := MeasurementsPath(id)
	b, err := readFileLimited(filepath.Join(dir, rel), maxMeasurements)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("review: case %s's measurements %s: %w", id, rel, err)
	}
	m, err := DecodeMeasurements(b)
	if err != nil {
		return nil, fmt.Errorf("review: case %s's measurements %s no longer read: %w", id, rel, err)
	}
	if m.Case != id {
		return nil, fmt.Errorf("review: %s holds case %s's measurements, not case %s's", rel, m.Case, id)
	}
	return m, nil
}

// AllMeasurements reads every case's measurements in dir, sorted by case; a file that
// does not read is an error naming it.
func AllMeasurements(dir string) ([]*Measurements, error) {
	ents, err := os.ReadDir(filepath.Join(dir, MeasurementsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("review: the measurements of %s: %w", dir, err)
	}
	var out []*Measurements
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		m, err := ReadMeasurements(dir, id)
		if err != nil {
			return nil, err
		}
		if m != nil {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b *Measurements) int { return strings.Compare(a.Case, b.Case) })
	return out, nil
}

func readFileLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", filepath.Base(path), limit)
	}
	return b, nil
}

// MeasurementsTableHeader are the columns of measurements.csv: one row per value of a
// measurement, its points (continuous voxel coordinates: voxel i covers [i, i+1)) and its
// points in LPS millimetres, each "x y z" separated by ";".
var MeasurementsTableHeader = []string{"case", "id", "label", "plane", "axis", "slice", "kind", "value_name", "value", "unit", "points_voxel", "points_world_mm"}

// MeasurementsTable is the table of every case's measurements (measurements.csv).
func MeasurementsTable(all []*Measurements) ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if err := w.Write(MeasurementsTableHeader); err != nil {
		return nil, err
	}
	coords := func(ps [][3]float64) string {
		s := make([]string, len(ps))
		for i, p := range ps {
			s[i] = tableNum(p[0]) + " " + tableNum(p[1]) + " " + tableNum(p[2])
		}
		return strings.Join(s, ";")
	}
	for _, c := range all {
		for _, m := range c.Measurements {
			for _, v := range m.Values {
				row := []string{c.Case, strconv.Itoa(m.ID), m.Label, m.Plane, strconv.Itoa(m.Axis), strconv.Itoa(m.Slice),
					string(m.Kind), v.Name, tableNum(v.Value), v.Unit, coords(m.Points), coords(m.World)}
				if err := w.Write(row); err != nil {
					return nil, err
				}
			}
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return nil, fmt.Errorf("export: %s: %w", FileMeasurementsTable, err)
	}
	return b.Bytes(), nil
}

func tableNum(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// writeMeasurements writes a package's measurements.json and measurements.csv; nothing
// when there are none.
func writeMeasurements(root string, all []*Measurements) error {
	if len(all) == 0 {
		return nil
	}
	b, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return fmt.Errorf("export: %s: %w", FileMeasurements, err)
	}
	if err := writeFile(root, FileMeasurements, append(b, '\n'), 0o644); err != nil {
		return err
	}
	t, err := MeasurementsTable(all)
	if err != nil {
		return err
	}
	return writeFile(root, FileMeasurementsTable, t, 0o644)
}

// checkMeasurements checks a package's measurements: measurements.json reads, each case's
// record well formed, and measurements.csv is its table, value for value.
func (v *Verification) checkMeasurements(fsys fs.FS, listed map[string]File) {
	_, hasJSON := listed[FileMeasurements]
	_, hasTable := listed[FileMeasurementsTable]
	if !hasJSON && !hasTable {
		return
	}
	if hasJSON != hasTable {
		v.fail("%s and %s go together, and the package has one of them", FileMeasurements, FileMeasurementsTable)
		return
	}
	b, err := readLimited(fsys, FileMeasurements, maxMeasurements)
	if err != nil {
		v.fail("%s: %v", FileMeasurements, err)
		return
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(b, &raws); err != nil {
		v.fail("%s is not a list of measurements records: %v", FileMeasurements, err)
		return
	}
	all := make([]*Measurements, len(raws))
	for i, r := range raws {
		if all[i], err = DecodeMeasurements(r); err != nil {
			v.fail("%s: record %d: %v", FileMeasurements, i+1, err)
			return
		}
	}
	want, err := MeasurementsTable(all)
	if err != nil {
		v.fail("%v", err)
		return
	}
	got, err := readLimited(fsys, FileMeasurementsTable, maxMeasurements)
	if err != nil {
		v.fail("%s: %v", FileMeasurementsTable, err)
		return
	}
	if !bytes.Equal(got, want) {
		v.fail("%s is not the table of %s's measurements", FileMeasurementsTable, FileMeasurements)
	}
}
