package run

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"amid/host/task"
	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/deid"
)

// De-identification (Options.Deidentify) is chosen before a run starts and holds for its
// whole life. The run keeps a secret key in deid.key (never exported). From the moment
// the data is resolved, every case id and patient is replaced by its pseudonym
// (deid.Keys.Pseudonym) and every case file by a link named after the pseudonym under
// cases/, so that nothing the run writes or hands to a plugin (labels, folds, the store,
// the audit log, review decisions, predictions, the report) holds a name taken from the
// data; the links are the only place that ties pseudonyms to the data. Every DICOM object
// the package holds goes through the Basic Application Level Confidentiality Profile with
// the run's key.
const keyFile = "deid.key"

// ErrDeidentify marks data that cannot be de-identified.
var ErrDeidentify = errors.New("cannot de-identify")

// newKey writes a new secret key into the run folder.
func newKey(dir string) error {
	return os.WriteFile(filepath.Join(dir, keyFile), deid.NewKey(), 0o600)
}

// loadKeys reads the secret key of the run folder dir.
func loadKeys(dir string) (*deid.Keys, error) {
	b, err := os.ReadFile(filepath.Join(dir, keyFile))
	if err != nil {
		return nil, fmt.Errorf("the de-identified run's key: %w", err)
	}
	return deid.New(b)
}

// resolve finds the run's cases: the task resolved in the data folder, with pseudonyms
// and links (under dir/cases) in place of case ids and files when the run is
// de-identified.
func resolve(t *task.Task, st *State, dir string) (*task.Dataset, error) {
	d, err := t.Resolve(st.Data)
	if err != nil {
		return nil, err
	}
	if !st.Deidentify {
		return d, nil
	}
	k, err := loadKeys(dir)
	if err != nil {
		return nil, err
	}
	if err := pseudonymize(t, d, k, filepath.Join(dir, "cases")); err != nil {
		return nil, err
	}
	return d, nil
}

// pseudonymize replaces the case ids and patients of d by their pseudonyms and the case
// files by links under root named after the pseudonyms.
func pseudonymize(t *task.Task, d *task.Dataset, k *deid.Keys, root string) error {
	if task.Table(t.Data.Train.Label.Format) {
		return fmt.Errorf("%w: the label format %s keeps every case in one table file, named by case id", ErrDeidentify, t.Data.Train.Label.Format)
	}
	seen := map[string]string{}
	for _, split := range [][]task.Case{d.Train, d.Test} {
		for i := range split {
			c := &split[i]
			p := k.Pseudonym(c.ID)
			if prev, dup := seen[p]; dup && prev != c.ID {
				return fmt.Errorf("%w: two case ids give the pseudonym %s", ErrDeidentify, p)
			}
			seen[p] = c.ID
			c.Patient = k.Pseudonym("patient " + c.Patient)
			dir := filepath.Join(root, p)
			for j, img := range c.Images {
				link, err := linkTo(img, dir, fmt.Sprintf("image%d", j))
				if err != nil {
					return err
				}
				c.Images[j] = link
			}
			if c.Label != "" {
				link, err := linkTo(c.Label, dir, "label")
				if err != nil {
					return err
				}
				c.Label = link
			}
			c.ID = p
		}
	}
	d.Root = root
	return nil
}

// linkTo makes (or keeps) dir/name<suffix>, a link to target; the suffix is the target's
// file ending (.nii.gz, .dcm, …; none for a folder).
func linkTo(target, dir, name string) (string, error) {
	if st, err := os.Stat(target); err == nil && !st.IsDir() {
		name += task.Suffix(filepath.Base(target))
	}
	link := filepath.Join(dir, name)
	if cur, err := os.Readlink(link); err == nil && cur == target {
		return link, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	_ = os.Remove(link)
	if err := os.Symlink(target, link); err != nil {
		return "", fmt.Errorf("%w: %v", ErrDeidentify, err)
	}
	return link, nil
}

// deidentifyObject puts a DICOM object of case id through the Basic Profile with the
// run's key.
func (r *Runner) deidentifyObject(f *dataset.File, id string) error {
	k, err := loadKeys(r.dir)
	if err != nil {
		return err
	}
	return k.Apply(f, deid.Options{Pseudonym: id})
}

// Cases returns the cases of the run in dir as the run sees them: pseudonyms and links
// when it is de-identified.
func Cases(dir string) (*task.Dataset, error) {
	st, err := LoadState(dir)
	if err != nil {
		return nil, err
	}
	t, err := task.Load(st.Task)
	if err != nil {
		return nil, err
	}
	d, err := resolve(t, st, dir)
	if err != nil {
		return nil, err
	}
	// A series chosen in a study folder is read from its own folder of links, as the run
	// read it (align).
	return d, d.LinkSeries(filepath.Join(dir, "channels", "series"))
}

// keyID identifies a run's key without revealing it (recorded in the audit log).
func keyID(k []byte) string {
	h := sha256.Sum256(slices.Concat([]byte("amid deid key id "), k))
	return hex.EncodeToString(h[:8])
}
