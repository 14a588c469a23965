package slurm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"amid/host/lanejob"
)

// job is what Slurm says of one job.
type job struct {
	ID     string
	State  string // the base state: PENDING, RUNNING, NODE_FAIL, ...
	Reason string // squeue's state reason ("None" dropped)
	Node   string
	// Exit is the batch script's exit status and Signal the signal that killed it (0:
	// none), when known.
	Exit, Signal int
}

// The explicit fields of the formats read where JSON is not spoken: squeue's and sacct's
// job id, state, reason, nodes (and sacct's exit code "status:signal").
const (
	squeueFormat = "%i|%T|%r|%N"
	sacctFormat  = "JobID,State,Reason,NodeList,ExitCode"
)

// state maps Slurm's job state onto lanejob's.
func (j job) state() lanejob.State {
	st := lanejob.State{Node: j.Node}
	reason := j.State
	if j.Reason != "" {
		reason += " (" + j.Reason + ")"
	}
	switch j.State {
	case "PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "SPECIAL_EXIT", "SUSPENDED", "STOPPED", "RESIZING":
		st.Phase, st.Node = lanejob.Queued, ""
		st.Reason = j.Reason
		if j.State != "PENDING" {
			st.Reason = reason
		}
		return st
	case "RUNNING", "COMPLETING", "SIGNALING", "STAGE_OUT":
		st.Phase = lanejob.Running
		return st
	case "COMPLETED":
		st.Outcome = lanejob.Completed
	case "CANCELLED":
		st.Outcome = lanejob.Cancelled
		reason = j.Reason
	case "TIMEOUT", "DEADLINE":
		st.Outcome = lanejob.TimedOut
	case "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "REVOKED":
		st.Outcome = lanejob.Lost
	case "FAILED", "OUT_OF_MEMORY":
		st.Outcome = lanejob.Failed
		switch {
		case j.Signal != 0:
			reason += fmt.Sprintf(", killed by signal %d", j.Signal)
		case j.Exit != 0:
			reason += fmt.Sprintf(", exit status %d", j.Exit)
		}
	default:
		// A state this program does not know: not taken for an end.
		st.Phase, st.Reason = lanejob.Queued, reason
		return st
	}
	st.Phase, st.Reason = lanejob.Ended, reason
	return st
}

// parseSqueueJSON reads `squeue --json`: its jobs by id. Slurm 22.05 (OpenAPI v0.0.38)
// gives job_state as a string and exit_code as the raw wait status; later versions give
// arrays of flags and objects; both are read. squeue lists every job it knows there,
// whatever the filters asked.
func parseSqueueJSON(b []byte) (map[string]job, error) {
	var doc struct {
		Errors []json.RawMessage `json:"errors"`
		Jobs   []struct {
			JobID       json.Number     `json:"job_id"`
			JobState    json.RawMessage `json:"job_state"`
			StateReason string          `json:"state_reason"`
			Nodes       string          `json:"nodes"`
			ExitCode    json.RawMessage `json:"exit_code"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("squeue --json: %w", err)
	}
	if len(doc.Errors) > 0 && len(doc.Jobs) == 0 {
		return nil, fmt.Errorf("squeue --json: %s", bytes.TrimSpace(doc.Errors[0]))
	}
	out := map[string]job{}
	for _, j := range doc.Jobs {
		st, err := firstState(j.JobState)
		if err != nil {
			return nil, fmt.Errorf("squeue --json: job %s: %w", j.JobID, err)
		}
		x := job{ID: j.JobID.String(), State: st, Reason: reason(j.StateReason), Node: j.Nodes}
		x.Exit, x.Signal = exitCode(j.ExitCode)
		out[x.ID] = x
	}
	return out, nil
}

// firstState reads a job state: "RUNNING", or ["RUNNING", "COMPLETING"] (the base state
// first, then flags).
func firstState(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var ss []string
	if err := json.Unmarshal(raw, &ss); err != nil || len(ss) == 0 {
		return "", fmt.Errorf("job_state %s is neither a state nor a list of them", raw)
	}
	return ss[0], nil
}

// exitCode reads an exit code: a raw wait status (22.05), or an object with return_code
// and signal (later versions).
func exitCode(raw json.RawMessage) (exit, signal int) {
	var n int
	if json.Unmarshal(raw, &n) == nil {
		return n >> 8 & 0xff, n & 0x7f
	}
	var o struct {
		ReturnCode json.RawMessage `json:"return_code"`
		Signal     struct {
			ID json.RawMessage `json:"id"`
		} `json:"signal"`
	}
	if json.Unmarshal(raw, &o) != nil {
		return 0, 0
	}
	return number(o.ReturnCode), number(o.Signal.ID)
}

// number reads 3 or {"set": true, "number": 3}.
func number(raw json.RawMessage) int {
	var n int
	if json.Unmarshal(raw, &n) == nil {
		return n
	}
	var o struct {
		Number int `json:"number"`
	}
	_ = json.Unmarshal(raw, &o)
	return o.Number
}

func reason(r string) string {
	if r == "None" {
		return ""
	}
	return r
}

// parseSqueueFields reads `squeue --noheader --format=squeueFormat`.
func parseSqueueFields(b []byte) (map[string]job, error) {
	out := map[string]job{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) != 4 {
			return nil, fmt.Errorf("squeue printed %q, not %s", line, squeueFormat)
		}
		out[f[0]] = job{ID: f[0], State: f[1], Reason: reason(f[2]), Node: f[3]}
	}
	return out, nil
}

// parseSacct reads `sacct --noheader --parsable2 --allocations --format=sacctFormat`.
func parseSacct(b []byte) (map[string]job, error) {
	out := map[string]job{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) != 5 {
			return nil, fmt.Errorf("sacct printed %q, not %s", line, sacctFormat)
		}
		// "CANCELLED by 0" names who; the state is its first word.
		st, _, _ := strings.Cut(f[1], " ")
		j := job{ID: f[0], State: st, Reason: reason(f[2]), Node: f[3]}
		if by, ok := strings.CutPrefix(f[1], "CANCELLED by "); ok {
			j.Reason = "by uid " + by
		}
		if e, s, ok := strings.Cut(f[4], ":"); ok {
			j.Exit, _ = strconv.Atoi(e)
			j.Signal, _ = strconv.Atoi(s)
		}
		out[j.ID] = j
	}
	return out, nil
}
