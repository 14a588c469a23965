package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	hostrun "amid/host/run"
	"amid/plugins/protocol"
)

// Without a terminal, progress lines are throttled to one each 10 s, but a plugin's
// message (here the time limit's last event) always gets a line of its own.
func TestDisplayMessages(t *testing.T) {
	var b bytes.Buffer
	d := newDisplay(&b)
	at := time.Date(2026, 12, 1, 15, 4, 5, 0, time.UTC)
	ev := func(step int64, msg string) hostrun.Event {
		return hostrun.Event{Time: at, Phase: "explore", Lane: "unet", Fold: 0, Progress: &protocol.Progress{Step: step, TotalSteps: 100, Losses: map[string]float64{"dice_ce": 0.5}, Message: msg}}
	}
	d.event(ev(10, ""))
	d.event(ev(20, "")) // within 10 s of the first: throttled
	d.event(ev(25, "time limit reached after step 25"))
	// A message with no figures (a cluster job's state, at the step reached) is a line
	// and no progress line.
	d.event(hostrun.Event{Time: at, Phase: "explore", Lane: "unet", Fold: 0, Progress: &protocol.Progress{Step: 25, TotalSteps: 100, Message: "Slurm job 12: running on node7"}})
	d.close()
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "step 10/100, dice_ce 0.5000") ||
		lines[1] != "15:04:05  explore  unet fold 0: time limit reached after step 25" ||
		lines[2] != "15:04:05  explore  unet fold 0: Slurm job 12: running on node7" {
		t.Errorf("display wrote:\n%s\nwant the step-10 line, then the messages", b.String())
	}
}
