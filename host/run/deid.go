package run

import (
	"context"
	"path/filepath"

	"amid/host/deidentify"
	"amid/host/task"
	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/deid"
)

// De-identification (Options.Deidentify) is chosen before a run starts and holds for its
// whole life; amid/host/deidentify says what it does to the data.

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
	k, err := deidentify.LoadKeys(dir)
	if err != nil {
		return nil, err
	}
	if err := deidentify.Pseudonymize(t, d, k, filepath.Join(dir, "cases")); err != nil {
		return nil, err
	}
	return d, nil
}

// deidentifyObject puts a DICOM object of case id through the Basic Profile with the
// run's key.
func (r *Runner) deidentifyObject(f *dataset.File, id string) error {
	k, err := deidentify.LoadKeys(r.dir)
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
	// read it (predict.Align).
	return d, d.LinkSeries(filepath.Join(dir, "channels", "series"))
}

// handOver makes the copies the plugins of a de-identified run read (deidentify.Handed), once the
// data is resolved and aligned and its labels converted; a run that is not de-identified
// hands its plugins the cases themselves.
func (r *Runner) handOver(ctx context.Context) error {
	if !r.st.Deidentify {
		return nil
	}
	h, err := deidentify.MakeHanded(ctx, r.task.Spec(), r.data, r.labels, r.path(deidentify.HandedDir), r.path("labels"))
	if err != nil {
		return err
	}
	r.handed = h
	return nil
}
