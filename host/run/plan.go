package run

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"

	"amid/host/audit"
	"amid/host/catalog"
	"amid/host/planner"
	"amid/host/supervisor"
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
	for i := range es {
		e := &es[i]
		if err := e.Usable(); err != nil {
			refused = append(refused, err.Error())
			continue
		}
		d, err := supervisor.Describe(ctx, e, r.env.Supervisor)
		if err != nil {
			refused = append(refused, err.Error())
			continue
		}
		for _, k := range d.Tasks {
			if k.Kind == r.task.Kind && slices.Contains(k.Dims, r.task.Dims) {
				out = append(out, e)
				break
			}
		}
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

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// plan asks each plugin for candidates and the planner for lanes.
func (r *Runner) plan(ctx context.Context) error {
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
	// Tell the plugins about how long a lane will train: the exploration share of the
	// budget over the lanes a first round usually holds (two per slot).
	spec := r.task.Spec()
	spec.LaneSeconds = exploreShare * r.usable().Seconds() / float64(2*slots())
	if pt.Spec, err = json.Marshal(spec); err != nil {
		return err
	}
	taskJSON, err := json.Marshal(r.task.Spec())
	if err != nil {
		return err
	}
	in := planner.Input{
		Task: taskJSON, Kind: r.task.Kind, Dims: r.task.Dims, Metric: r.task.Metric.Name, HigherIsBetter: true,
		Fingerprint: fp, Budget: r.st.Budget, Remaining: r.remaining(), Slots: slots(),
	}
	for _, e := range entries {
		p, err := supervisor.Start(ctx, e, r.env.Supervisor)
		if err != nil {
			return err
		}
		d, derr := p.Describe(ctx)
		resp, err := p.Plan(ctx, &protocol.PlanRequest{Fingerprint: fp, Task: pt})
		p.Kill()
		if derr != nil {
			return derr
		}
		if err != nil {
			r.logf("plugin %s could not plan: %v", e.Name, err)
			continue
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
	seen := map[string]bool{}
	for _, l := range lanes {
		id := unsafeName.ReplaceAllString(l.Name, "_")
		for seen[id] {
			id += "_"
		}
		seen[id] = true
		r.st.Lanes = append(r.st.Lanes, &LaneState{Lane: l, ID: id, Folds: map[int]FoldState{}})
		r.logf("lane %s (%s): %s", id, l.Plugin, l.Rationale)
	}
	if _, err := writeJSON(r.path("planner-input.json"), in); err != nil {
		return err
	}
	sum, err := writeJSON(r.path("plan.json"), lanes)
	if err != nil {
		return err
	}
	plugins := map[string]string{}
	for _, e := range entries {
		plugins["plugin:"+e.Name] = e.SHA256
	}
	return r.record(audit.RolePlanner, "plan.made", plugins, map[string]string{"plan.json": sum}, map[string]any{"lanes": len(lanes), "planner": r.st.Planner})
}

// slots is how many lanes may train at once: each lane's engine uses every core, so one
// on a CPU-only machine.
func slots() int { return 1 }

// refine shows the planner the results of exploration and adds the new lanes it proposes
// (an LLM planner may change configurations in the light of results; the rules only rank
// what exists). New lanes are explored before exploitation, time permitting.
func (r *Runner) refine(ctx context.Context) error {
	if r.planner == nil {
		return nil
	}
	var in planner.Input
	if err := readJSON(r.path("planner-input.json"), &in); err != nil {
		return err
	}
	in.Remaining = r.remaining()
	for _, l := range r.ranked() {
		m, n := l.Mean()
		in.Results = append(in.Results, planner.Result{Lane: l.Name, Plugin: l.Plugin, Config: l.Config, Score: m, Folds: n, Status: "done", Took: l.Folds[0].Took})
	}
	for _, l := range r.st.Lanes {
		if _, n := l.Mean(); n == 0 {
			in.Results = append(in.Results, planner.Result{Lane: l.Name, Plugin: l.Plugin, Config: l.Config, Score: 0, Status: "failed", Reason: oneLine(l.Folds[0].Error)})
		}
	}
	lanes, err := r.planner.Plan(ctx, in)
	if err != nil {
		r.logf("the planner could not refine the lanes (%v); exploitation goes on with the explored ones", err)
		return nil
	}
	known := map[string]bool{}
	for _, l := range r.st.Lanes {
		known[l.Name] = true
		known[string(l.Config)] = true
	}
	added := 0
	for _, l := range lanes {
		if known[l.Name] || known[string(l.Config)] {
			continue
		}
		id := unsafeName.ReplaceAllString(l.Name, "_")
		for r.st.lane(id) != nil {
			id += "_"
		}
		r.st.Lanes = append(r.st.Lanes, &LaneState{Lane: l, ID: id, Folds: map[int]FoldState{}})
		r.logf("the planner adds lane %s (%s): %s", id, l.Plugin, l.Rationale)
		added++
	}
	if added == 0 {
		return nil
	}
	if err := r.record(audit.RolePlanner, "plan.refined", nil, nil, map[string]any{"added": added, "planner": r.st.Planner}); err != nil {
		return err
	}
	return r.explore(ctx)
}
