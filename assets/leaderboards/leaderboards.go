// Package leaderboards embeds the ReX-MLE leaderboards that AMID ranks a graded submission
// against: for each of the 20 challenge ids, leaderboard.csv (the top rows of the original
// Grand-Challenge board) and metric_config.json (each metric's direction). They are copied
// unchanged from rajpurkarlab/ReX-MLE at commit 477c834, path
// rex-mle/rexmle/challenges/<id>/, so the program needs no reference folder at run time.
package leaderboards

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
)

//go:embed */leaderboard.csv */metric_config.json
var files embed.FS

// ErrUnknown is returned for a challenge id that has no embedded leaderboard.
var ErrUnknown = errors.New("no leaderboard for this challenge")

// IDs lists the challenge ids with an embedded leaderboard, sorted.
func IDs() []string {
	ents, _ := fs.ReadDir(files, ".")
	var ids []string
	for _, e := range ents {
		if e.IsDir() {
			ids = append(ids, e.Name())
		}
	}
	sort.Strings(ids)
	return ids
}

// Files returns the raw leaderboard.csv and metric_config.json of challenge id.
func Files(id string) (csv, config []byte, err error) {
	if !fs.ValidPath(id) || id == "." {
		return nil, nil, fmt.Errorf("%w: %q", ErrUnknown, id)
	}
	csv, err = files.ReadFile(id + "/leaderboard.csv")
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %q", ErrUnknown, id)
	}
	config, err = files.ReadFile(id + "/metric_config.json")
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %q has no metric_config.json", ErrUnknown, id)
	}
	return csv, config, nil
}
