package plugintest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"amid/plugins/protocol"
	"amid/plugins/sdk"
)

// recorder is a testing.TB that records failures instead of failing the test.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...); runtime.Goexit() }

// check runs checkTraining on train with a recorder and returns what it recorded.
func check(t *testing.T, train Trainer) []string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		checkTraining(r, train, &protocol.TrainRequest{WorkDir: t.TempDir()}, 0)
	}()
	<-done
	return r.errs
}

// fake is a trainer of steps steps whose loss at step s is 1/(s − shift(start)), start
// being the step resumed from; it reports every step, writes a checkpoint (the step) every
// 2 and honours Until unless told to ignore it.
func fake(ignoreUntil bool, shift func(start int64) int64) Trainer {
	const steps = 6 // three checkpoints (2, 4 and the last) and two rounds of 3
	return func(_ context.Context, req *protocol.TrainRequest, report func(*protocol.Progress) error) (*protocol.TrainResult, error) {
		var start int64
		if req.ResumeFrom != "" {
			b, err := os.ReadFile(req.ResumeFrom)
			if err != nil {
				return nil, err
			}
			if start, err = strconv.ParseInt(string(b), 10, 64); err != nil {
				return nil, err
			}
		}
		end := int64(steps)
		if req.Until > 0 && !ignoreUntil {
			end = min(end, req.Until)
		}
		write := func(name string, s int64) (string, error) {
			p := filepath.Join(req.WorkDir, name)
			_, err := sdk.WriteFile(p, []byte(strconv.FormatInt(s, 10)))
			return p, err
		}
		for s := start + 1; s <= end; s++ {
			p := &protocol.Progress{Step: s, TotalSteps: steps, Losses: map[string]float64{"l": 1 / float64(s-shift(start))}}
			if s%2 == 0 && s < end {
				var err error
				if p.Checkpoint, err = write(fmt.Sprintf("step-%d", s), s); err != nil {
					return nil, err
				}
			}
			if err := report(p); err != nil {
				return nil, err
			}
		}
		final, err := write("final", end)
		if err != nil {
			return nil, err
		}
		return sdk.Result(final, end, nil)
	}
}

// TestCheckTraining: the resume and rounds checks pass a trainer that resumes exactly and
// honours Until, and fail one that ignores Until or starts its data order again.
func TestCheckTraining(t *testing.T) {
	goesOn := func(int64) int64 { return 0 }
	startsAgain := func(start int64) int64 { return start }
	if errs := check(t, fake(false, goesOn)); len(errs) > 0 {
		t.Errorf("a trainer that resumes exactly failed: %v", errs)
	}
	for _, c := range []struct {
		name        string
		ignoreUntil bool
		shift       func(int64) int64
		want        string
	}{
		{"ignores Until", true, goesOn, "rounds: the first round (Until 3) stopped at step 6"},
		{"starts its data order again", false, startsAgain, "resume from the checkpoint of step 2: step 3: losses"},
	} {
		errs := check(t, fake(c.ignoreUntil, c.shift))
		if !strings.Contains(strings.Join(errs, "\n"), c.want) {
			t.Errorf("a trainer that %s: failures %q, want one containing %q", c.name, errs, c.want)
		}
	}
}
