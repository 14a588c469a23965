package predict

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"amid/assets/fileio"
	"amid/host/dicomweb"
)

// FileWatch is the watch folder's record of the studies it has predicted.
const FileWatch = "watch.json"

// Watch predicts, with one package, every study a PACS holds that matches a query, once
// each: it asks the PACS every Every, retrieves each study it has not predicted yet, and
// predicts it (Apply, with its DICOM SEG stored back) into a folder of its own under Out.
// Out/watch.json records each study when its prediction has ended, so that a watch
// restarted after a stop or a crash predicts no study twice; a study whose prediction was
// cut off is predicted again from the start (its folder emptied first).
type Watch struct {
	Package string
	Client  *dicomweb.Client
	Query   []string // QIDO-RS filters key=value (none: every study)
	Every   time.Duration
	Out     string
	Options Options
	// Rounds, when above 0, stops the watch after that many queries (tests); 0 watches
	// until ctx ends.
	Rounds int
	// Log hears a sentence for each study predicted and each query that failed.
	Log func(string)
}

// watched is watch.json.
type watched struct {
	Done map[string]watchedStudy `json:"done"`
}

type watchedStudy struct {
	Folder string    `json:"folder"`
	Failed int       `json:"failed"`
	Ended  time.Time `json:"ended"`
}

// Run watches until ctx ends (nil then) or Rounds queries were made. A PACS that does not
// answer is logged and asked again at the next round; a study that fails is recorded with
// its failures and not retried.
func (w *Watch) Run(ctx context.Context) error {
	if err := os.MkdirAll(w.Out, 0o755); err != nil {
		return err
	}
	rec := watched{Done: map[string]watchedStudy{}}
	path := filepath.Join(w.Out, FileWatch)
	if err := fileio.ReadJSON(path, &rec); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if rec.Done == nil {
		rec.Done = map[string]watchedStudy{}
	}
	every := w.Every
	if every <= 0 {
		every = 30 * time.Second
	}
	log := w.Log
	if log == nil {
		log = func(string) {}
	}
	for round := 1; ; round++ {
		uids, err := FindStudies(ctx, w.Client, w.Query)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log(fmt.Sprintf("round %d: %v; asking again in %v", round, err, every))
		}
		for _, uid := range uids {
			if _, ok := rec.Done[uid]; ok {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil
			}
			got, err := w.one(ctx, uid)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				if errors.Is(err, dicomweb.ErrPACS) {
					log(fmt.Sprintf("study %s: %v; trying again next round", uid, err))
					continue
				}
				return err
			}
			rec.Done[uid] = got
			b, err := json.MarshalIndent(rec, "", "  ")
			if err != nil {
				return err
			}
			if err := fileio.Write(path, append(b, '\n')); err != nil {
				return err
			}
			log(fmt.Sprintf("study %s: predicted into %s (%d failed)", uid, got.Folder, got.Failed))
		}
		if w.Rounds > 0 && round >= w.Rounds {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
}

// one retrieves and predicts one study into its folder under Out.
func (w *Watch) one(ctx context.Context, uid string) (watchedStudy, error) {
	var none watchedStudy
	folder := filepath.Join(w.Out, uid)
	tmp := filepath.Join(w.Out, ".retrieved")
	// A folder without a record is a prediction cut off: it starts again.
	for _, p := range []string{folder, tmp} {
		if err := os.RemoveAll(p); err != nil {
			return none, err
		}
	}
	defer os.RemoveAll(tmp)
	inputs, err := Retrieve(ctx, w.Client, []string{uid}, tmp)
	if err != nil {
		return none, err
	}
	o := w.Options
	o.Send = w.Client
	res, err := Apply(ctx, w.Package, inputs, folder, o)
	if err != nil {
		return none, fmt.Errorf("study %s: %w", uid, err)
	}
	return watchedStudy{Folder: uid, Failed: res.Failed, Ended: time.Now().UTC()}, nil
}
