package run

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"amid/assets/fileio"
	"amid/host/audit"
	"amid/host/catalog"
	"amid/host/evaluate"
	"amid/host/planner"
	"amid/host/schedule"
	"amid/host/supervisor"
	"amid/plugins/compute"
	"amid/plugins/protocol"
)

// protoTask is the protocol's view of the task.
func (r *Runner) protoTask() (protocol.Task, error) {
	spec, err := json.Marshal(r.task.Spec())
	if err != nil {
		return protocol.Task{}, err
	}
	return protocol.Task{Kind: r.task.Kind, Dims: r.task.Dims, Metric: r.task.Metric.Name, Spec: spec}, nil
}

// plugins returns the trusted plugins that handle the task's kind and dimension, with
// their descriptions.
func (r *Runner) plugins(ctx context.Context) ([]*catalog.Entry, error) {
	if r.env.Catalog == nil {
		return nil, fmt.Errorf("no plugin catalog")
	}
	es, err := r.env.Catalog.Scan()
	if err != nil {
		return nil, err
	}
	var out []*catalog.Entry
	var refused []string
	var described []compute.Identity
	for i := range es {
		e := &es[i]
		if err := e.Usable(); err != nil {
			refused = append(refused, err.Error())
			continue
		}
		began := time.Now()
		d, err := supervisor.Describe(ctx, e, r.env.Supervisor)
		if err != nil {
			refused = append(refused, err.Error())
			continue
		}
		r.st.PluginStart = max(r.st.PluginStart, time.Since(began))
		for _, k := range d.Tasks {
			if k.Kind == r.task.Kind && slices.Contains(k.Dims, r.task.Dims) {
				out = append(out, e)
				described = append(described, d.Compute)
				if fi, err := os.Stat(e.Path); err == nil {
					r.st.PluginBytes = max(r.st.PluginBytes, fi.Size())
				}
				break
			}
		}
	}
	r.st.Device = placesDevice(settingIn(r.env.Supervisor.Env), described)
	if l, ok := r.exec.(*Local); ok {
		l.Device = r.st.Device
	}
	if len(out) == 0 {
		msg := fmt.Sprintf("no trusted plugin handles %d-D %s", r.task.Dims, r.task.Kind)
		if len(refused) > 0 {
			msg += "; refused: " + refused[0]
		}
		return nil, fmt.Errorf("%s", msg)
	}
	return out, nil
}

// placesDevice is the device setting the local places pass on: setting (the host's; none
// is the plugins' default, auto) when a plugin found that device (the identity it
// describes is a GPU's), else cpu.
func placesDevice(setting string, described []compute.Identity) string {
	if setting == "cpu" {
		return "cpu"
	}
	if setting == "" {
		setting = "auto"
	}
	for _, id := range described {
		if strings.HasPrefix(id.Device, "vulkan") {
			return setting
		}
	}
	return "cpu"
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// planLanes is the number of lanes the first round is sized for: two rounds of halving
// (amid/host/planner.Rules keeps as many).
const planLanes = 4

// Plan is plan.json: the lanes, what was not planned and why, and the schedule's figures
// the lanes were sized to, with the rule that makes the final model.
type Plan struct {
	Lanes []planner.Lane `json:"lanes"`
	// Skipped are the lanes the plugins did not plan, NotAdmitted those the schedule left
	// out (their minimum does not fit the first round), each with why.
	Skipped     []string `json:"skipped,omitempty"`
	NotAdmitted []string `json:"not_admitted,omitempty"`
	// FirstRound is the time a lane trains in the first round, TrainSeconds about how long
	// the winner trains in all, MinSteps the minimum steps by lane with why.
	FirstRound   float64        `json:"first_round_seconds"`
	TrainSeconds float64        `json:"train_seconds"`
	MinSteps     map[string]int `json:"min_steps"`
	MinStepsWhy  string         `json:"min_steps_why"`
	Places       []Place        `json:"places"`
	// FinalRule is how the final model is made.
	FinalRule string `json:"final_rule"`
	// Refined is what the refinement after the first round decided, each with why: the
	// lanes it added, those it proposed but did not train, and why the rules planned no
	// cascade to full resolution when they say (amid/host/planner.Cascade).
	Refined []string `json:"refined,omitempty"`
}

// calibrationKey names a plugin's calibration on this machine in the store.
func calibrationKey(e *catalog.Entry, d *protocol.DescribeResponse) string {
	return e.Name + "|" + e.SHA256 + "|" + d.Compute.String()
}

// plan asks each plugin for candidates sized to the first round's share, and the planner
// for lanes; the schedule admits those whose minimum fits.
func (r *Runner) plan(ctx context.Context) error {
	if r.st.From != nil {
		return r.planFrom(ctx)
	}
	entries, err := r.plugins(ctx)
	if err != nil {
		return err
	}
	fp, err := os.ReadFile(r.path("fingerprint.json"))
	if err != nil {
		return err
	}
	pt, err := r.protoTask()
	if err != nil {
		return err
	}
	curves, err := schedule.Recorded()
	if err != nil {
		return err
	}
	places := r.exec.Places()
	usable := r.usable()
	explore := time.Duration(schedule.ExploreShare * float64(usable))
	first := schedule.FirstShare(explore, planLanes, len(places), schedule.Eta)
	doc := Plan{
		FirstRound: first.Seconds(), Places: places, FinalRule: schedule.FinalRule,
		TrainSeconds: schedule.WinnerShare(usable, explore, planLanes, len(places), schedule.Eta).Seconds(),
		MinSteps:     curves.MinStepsFor(r.task.Kind),
	}
	_, doc.MinStepsWhy = curves.MinSteps(r.task.Kind, "")
	// Tell the plugins each lane's first-round share, about how long the winner trains,
	// and the minimum steps, so that they size the lanes to the time they get.
	spec := r.task.Spec()
	spec.LaneSeconds, spec.TrainSeconds, spec.MinSteps = doc.FirstRound, doc.TrainSeconds, doc.MinSteps
	if r.st.Steps > 0 {
		// Fixed step counts: the plugins plan their own sizes, untimed, and time bounds
		// neither the lanes planned nor those admitted.
		spec.LaneSeconds, spec.TrainSeconds, doc.FirstRound, doc.TrainSeconds = 0, 0, 0, 0
		r.logf("each lane trains %d steps in the first round and %d times as many in each later one, however long they take", r.st.Steps, schedule.Eta)
	} else {
		r.logf("a lane trains %v in the first round and the winner about %v in all; minimum %s", first.Round(time.Second), time.Duration(doc.TrainSeconds*float64(time.Second)).Round(time.Second), doc.MinStepsWhy)
	}
	if pt.Spec, err = json.Marshal(spec); err != nil {
		return err
	}
	taskJSON, err := json.Marshal(r.task.Spec())
	if err != nil {
		return err
	}
	in := planner.Input{
		Task: taskJSON, Kind: r.task.Kind, Dims: r.task.Dims, Metric: r.task.Metric.Name, HigherIsBetter: true,
		Fingerprint: fp, Budget: r.st.Budget, Remaining: r.remaining(), Slots: len(places),
		FirstRound: first, MinSteps: doc.MinSteps,
	}
	if r.st.Steps > 0 {
		in.Remaining, in.FirstRound = 0, 0
	}
	for _, e := range entries {
		p, err := supervisor.Start(ctx, e, r.env.Supervisor)
		if err != nil {
			return err
		}
		d, derr := p.Describe(ctx)
		if derr != nil {
			p.Kill()
			return derr
		}
		var calib []byte
		cs := r.env.Catalog.Store
		if cs != nil {
			calib, _ = cs.Calibration(calibrationKey(e, d))
		}
		resp, err := p.Plan(ctx, &protocol.PlanRequest{Fingerprint: fp, Task: pt, Calibration: calib})
		p.Kill()
		if err != nil {
			r.logf("plugin %s could not plan: %v", e.Name, err)
			continue
		}
		if cs != nil && len(resp.Calibration) > 0 && !bytes.Equal(resp.Calibration, calib) {
			if err := cs.PutCalibration(calibrationKey(e, d), resp.Calibration); err != nil {
				return err
			}
			r.logf("plugin %s measured its training speed on this machine; kept for later runs", e.Name)
		}
		for _, s := range resp.Skipped {
			doc.Skipped = append(doc.Skipped, e.Name+": "+s)
			r.logf("plugin %s did not plan %s", e.Name, s)
		}
		in.Plugins = append(in.Plugins, planner.Plugin{Name: e.Name, Schema: d.ConfigSchema, Candidates: resp.Candidates})
	}
	var pl planner.Planner = planner.Rules{}
	if r.planner != nil {
		pl = r.planner
	}
	lanes, err := pl.Plan(ctx, in)
	if err != nil && r.planner != nil {
		r.logf("planner %s failed (%v); using the rules", r.st.Planner, err)
		r.st.Notes = append(r.st.Notes, fmt.Sprintf("planner %s failed: %v; the rules planned instead", r.st.Planner, err))
		lanes, err = planner.Rules{}.Plan(ctx, in)
	}
	if err != nil {
		return err
	}
	var sched []*schedule.Lane
	for _, l := range r.laneStates(in, lanes) {
		r.logf("lane %s (%s)%s: %s", l.ID, l.Plugin, onDevice(l), l.Rationale)
		r.st.Lanes = append(r.st.Lanes, l)
		sched = append(sched, &l.Schedule)
	}
	if r.st.Steps == 0 {
		_, doc.NotAdmitted = schedule.Admit(sched, explore, len(places), schedule.Eta)
	}
	for _, w := range doc.NotAdmitted {
		r.logf("%s", w)
	}
	doc.Lanes = lanes
	if _, err := writeJSON(r.path("planner-input.json"), in); err != nil {
		return err
	}
	sum, err := writeJSON(r.path("plan.json"), doc)
	if err != nil {
		return err
	}
	plugins := map[string]string{}
	for _, e := range entries {
		plugins["plugin:"+e.Name] = e.SHA256
	}
	return r.record(audit.RolePlanner, "plan.made", plugins, map[string]string{"plan.json": sum},
		map[string]any{"lanes": len(lanes), "planner": r.st.Planner, "skipped": doc.Skipped, "not_admitted": doc.NotAdmitted, "min_steps": doc.MinSteps, "final_rule": doc.FinalRule})
}

// laneStates are the run's lanes for the planner's, with what the schedule needs of
// each: the step time and memory their plugin planned, and their minimum steps; and the
// device it planned them for.
func (r *Runner) laneStates(in planner.Input, lanes []planner.Lane) []*LaneState {
	var out []*LaneState
	taken := map[string]bool{}
	for _, l := range lanes {
		id := unsafeName.ReplaceAllString(l.Name, "_")
		for r.st.lane(id) != nil || taken[id] {
			id += "_"
		}
		taken[id] = true
		ls := &LaneState{Lane: l, ID: id, Folds: map[int]FoldState{}}
		ls.Schedule = schedule.Lane{ID: id, MinSteps: 1, MaxSteps: l.MaxSteps, Overhead: (3 * r.st.PluginStart).Seconds(), Span: evaluate.Span(r.task.Spec())}
		for _, p := range in.Plugins {
			for _, c := range p.Candidates {
				if p.Name == l.Plugin && bytes.Equal(c.Config, l.Config) {
					ls.Schedule.StepSeconds, ls.Schedule.Memory = c.StepSeconds, c.MemoryBytes
					ls.Device = c.Device
					ls.Schedule.MinSteps = minSteps(in.MinSteps, c.Name)
					ls.Schedule.MaxSteps = int(c.MaxSteps)
				}
			}
		}
		if ls.Schedule.StepSeconds == 0 {
			// A configuration the plugin did not plan (the LLM planner's): its step time is
			// unknown until it trains; the slowest planned lane's is the guess.
			for _, p := range in.Plugins {
				for _, c := range p.Candidates {
					ls.Schedule.StepSeconds = max(ls.Schedule.StepSeconds, c.StepSeconds)
					if p.Name == l.Plugin && ls.Device == "" {
						ls.Device = c.Device // a plugin plans all its candidates for one device
					}
				}
			}
			ls.Schedule.MinSteps = minSteps(in.MinSteps, "")
		}
		if m := ls.Schedule.MaxSteps; m > 0 {
			// A lane whose cap comes before the recorded minimum is judged at its cap.
			ls.Schedule.MinSteps = min(ls.Schedule.MinSteps, m)
		}
		out = append(out, ls)
	}
	return out
}

// minSteps is the minimum of a lane named name, else of any lane.
func minSteps(m map[string]int, name string) int {
	if n, ok := m[name]; ok {
		return max(n, 1)
	}
	return max(m[""], 1)
}

// refine shows the planner the first round's results (each lane's validation score, its
// per-class scores and confusions, its curve and step time) and adds the new lanes it
// proposes, with why; they train a first round before the next promotion. A new lane whose
// minimum does not fit what exploration has left is not added, and the log says why.
func (r *Runner) refine(ctx context.Context) ([]*LaneState, error) {
	var in planner.Input
	if err := fileio.ReadJSON(r.path("planner-input.json"), &in); err != nil {
		return nil, err
	}
	in.Remaining = r.remaining()
	left := r.st.ExploreEnd - r.spent()
	in.Explore = max(left, 0)
	for _, l := range r.st.Lanes {
		f := l.Folds[0]
		res := planner.Result{Lane: l.Name, Plugin: l.Plugin, Config: l.Config, Score: f.Score, Extra: f.Extra, Folds: 1, Status: "done",
			Took: f.Took, Steps: f.Steps, StepSeconds: l.Schedule.StepSeconds, Checkpoint: f.Checkpoint, SHA256: f.SHA256}
		if f.Undefined != "" {
			res.Reason = "its validation score is undefined: " + f.Undefined
		}
		if f.Status != FoldDone {
			res.Score, res.Folds, res.Status, res.Reason = 0, 0, "failed", oneLine(f.Error)
			if l.Schedule.Stopped != "" && f.Error == "" {
				res.Status, res.Reason = "not trained", l.Schedule.Stopped
			}
		}
		in.Results = append(in.Results, res)
	}
	var pl planner.Planner = planner.Rules{}
	if r.planner != nil {
		pl = r.planner
	}
	lanes, err := pl.Plan(ctx, in)
	if err != nil {
		r.logf("the planner could not refine the lanes (%v); exploration goes on with the planned ones", err)
		return nil, nil
	}
	// What the refinement decided, for plan.json: the lanes it added and those it did not
	// train, and why the rules planned no cascade when they say.
	var said []string
	if _, why := planner.Cascade(in); why != "" {
		r.logf("%s", why)
		r.st.Notes = append(r.st.Notes, why)
		said = append(said, why)
	}
	known := map[string]bool{}
	for _, l := range r.st.Lanes {
		known[l.Name] = true
		known[string(l.Config)] = true
	}
	var fresh []planner.Lane
	for _, l := range lanes {
		if !known[l.Name] && !known[string(l.Config)] {
			fresh = append(fresh, l)
		}
	}
	if len(fresh) == 0 {
		if len(said) == 0 {
			return nil, nil
		}
		sum, err := r.planRefined(said)
		if err != nil {
			return nil, err
		}
		return nil, r.record(audit.RolePlanner, "plan.refined", nil, map[string]string{"plan.json": sum}, map[string]any{"added": []string{}, "planner": r.st.Planner, "refined": said})
	}
	added := r.laneStates(in, fresh)
	left = r.st.ExploreEnd - r.spent() // after the planner's reply
	var kept []*LaneState
	var names []string
	for _, l := range added {
		if base := r.st.laneNamed(l.Base); base != nil && base.Schedule.StepSeconds > 0 {
			// Its step costs about what the lane it changes was seen to cost.
			l.Schedule.StepSeconds, l.Schedule.Overhead = base.Schedule.StepSeconds, base.Schedule.Overhead
			l.Schedule.MinSteps = max(l.Schedule.MinSteps, base.Schedule.MinSteps)
		}
		// Its first round shares what exploration has left with one more round of every
		// lane still explored (the promotion that follows takes what remains).
		n, places := len(kept)+1+activeLanes(r.st.Lanes), max(len(r.exec.Places()), 1)
		share := left / time.Duration((n+places-1)/places)
		if need := time.Duration((float64(l.Schedule.MinSteps)*l.Schedule.StepSeconds + l.Schedule.Overhead) * float64(time.Second)); need > share && r.st.Steps == 0 {
			note := fmt.Sprintf("lane %s, proposed after the first round (%s), is not trained: its minimum of %d steps takes about %v, exploration has about %v a lane left",
				l.ID, l.Rationale, l.Schedule.MinSteps, need.Round(time.Second), max(share, 0).Round(time.Second))
			r.logf("%s", note)
			r.st.Notes = append(r.st.Notes, note)
			said = append(said, note)
			continue
		}
		said = append(said, fmt.Sprintf("lane %s added: %s", l.ID, l.Rationale))
		r.logf("the planner adds lane %s (%s): %s", l.ID, l.Plugin, l.Rationale)
		r.st.Lanes = append(r.st.Lanes, l)
		kept = append(kept, l)
		names = append(names, l.ID)
	}
	sum, err := r.planRefined(said)
	if err != nil {
		return nil, err
	}
	if err := r.record(audit.RolePlanner, "plan.refined", nil, map[string]string{"plan.json": sum}, map[string]any{"added": names, "planner": r.st.Planner, "proposed": rationales(added)}); err != nil {
		return nil, err
	}
	return kept, nil
}

// planRefined adds what the refinement decided to plan.json and returns the file's new
// SHA-256.
func (r *Runner) planRefined(said []string) (string, error) {
	var doc Plan
	if err := fileio.ReadJSON(r.path("plan.json"), &doc); err != nil {
		return "", err
	}
	doc.Refined = append(doc.Refined, said...)
	return writeJSON(r.path("plan.json"), doc)
}

// activeLanes counts the lanes still explored.
func activeLanes(ls []*LaneState) int {
	n := 0
	for _, l := range ls {
		if l.Schedule.Stopped == "" {
			n++
		}
	}
	return n
}

func rationales(ls []*LaneState) map[string]string {
	out := map[string]string{}
	for _, l := range ls {
		out[l.ID] = l.Rationale
	}
	return out
}

// onDevice says where a lane was planned to train, " on DEVICE (N MiB planned)", or
// nothing when its plugin did not say.
func onDevice(l *LaneState) string {
	switch {
	case l.Device == "":
		return ""
	case l.Schedule.Memory > 0:
		return fmt.Sprintf(" on %s (%d MiB planned)", l.Device, l.Schedule.Memory>>20)
	}
	return " on " + l.Device
}
