package assets

import (
	"slices"
	"testing"

	"amid/assets/leaderboards"
	"amid/host/grade"
	"amid/host/task"
)

// Every ReX-MLE challenge has a built-in task that passes the schema, names itself and its
// grader by the challenge id, and ranks on an embedded leaderboard.
func TestRexMLETasks(t *testing.T) {
	ids := RexMLETaskIDs()
	want := slices.Sorted(slices.Values(grade.ChallengeIDs))
	if !slices.Equal(ids, want) {
		t.Fatalf("built-in tasks %v, want the challenge ids %v", ids, want)
	}
	for _, id := range ids {
		b, err := RexMLETask(id)
		if err != nil {
			t.Fatal(err)
		}
		tk, err := task.Parse(b)
		if err != nil {
			t.Errorf("%s: %v", id, err)
			continue
		}
		if tk.ID != id || tk.Challenge != id || tk.Leaderboard != id {
			t.Errorf("%s: id %q, challenge %q, leaderboard %q", id, tk.ID, tk.Challenge, tk.Leaderboard)
		}
		if _, _, err := leaderboards.Files(tk.Leaderboard); err != nil {
			t.Errorf("%s: %v", id, err)
		}
		if tk.Budget <= 0 {
			t.Errorf("%s: no budget", id)
		}
	}
	for _, bad := range []string{"", "../assets", "rexmle/isles22", "ravir"} {
		if _, err := RexMLETask(bad); err == nil {
			t.Errorf("RexMLETask(%q) found a task", bad)
		}
	}
}
