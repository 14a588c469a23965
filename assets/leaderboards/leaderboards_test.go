package leaderboards

import (
	"bytes"
	"errors"
	"testing"
)

// The 20 challenge ids of ReX-MLE (reference rexmle.md §4).
func TestAllTwentyChallenges(t *testing.T) {
	ids := IDs()
	if len(ids) != 20 {
		t.Fatalf("got %d ids, want 20: %v", len(ids), ids)
	}
	for _, id := range ids {
		csv, cfg, err := Files(id)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(csv, []byte("rank,team,mean_position,")) {
			t.Errorf("%s: leaderboard.csv header %q", id, csv[:min(40, len(csv))])
		}
		if !bytes.Contains(cfg, []byte("metric_directions")) {
			t.Errorf("%s: metric_config.json lacks metric_directions", id)
		}
	}
	if _, _, err := Files("ravir"); !errors.Is(err, ErrUnknown) {
		t.Errorf("ravir: err = %v, want ErrUnknown", err)
	}
	if _, _, err := Files("../x"); !errors.Is(err, ErrUnknown) {
		t.Errorf("../x: err = %v, want ErrUnknown", err)
	}
}
