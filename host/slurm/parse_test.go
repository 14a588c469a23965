package slurm

import (
	"os"
	"strings"
	"testing"
	"time"

	"amid/host/lanejob"
	"amid/host/run"
)

// testdata/squeue-22.05.8.json is `squeue --json` of Debian 12's slurm-wlm 22.05.8 on the
// test cluster of .ci/slurm.sh, after jobs that completed (1), exited with status 3 (2),
// were killed by signal 9 (3), were cancelled running (4, 7) and pending (5), lost their
// node to `scontrol update State=DOWN` (6), and one running (8) beside one waiting for
// its CPUs (9).
func TestParseSqueue2205(t *testing.T) {
	b, err := os.ReadFile("testdata/squeue-22.05.8.json")
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := parseSqueueJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]lanejob.State{
		"1": {Phase: lanejob.Ended, Outcome: lanejob.Completed, Reason: "COMPLETED", Node: "amid1"},
		"2": {Phase: lanejob.Ended, Outcome: lanejob.Failed, Reason: "FAILED (NonZeroExitCode), exit status 3", Node: "amid1"},
		"3": {Phase: lanejob.Ended, Outcome: lanejob.Failed, Reason: "FAILED (JobLaunchFailure), killed by signal 9", Node: "amid1"},
		"4": {Phase: lanejob.Ended, Outcome: lanejob.Cancelled, Node: "amid1"},
		"5": {Phase: lanejob.Ended, Outcome: lanejob.Cancelled, Reason: "BeginTime"},
		"6": {Phase: lanejob.Ended, Outcome: lanejob.Lost, Reason: "NODE_FAIL (NodeDown)", Node: "amid1"},
		"8": {Phase: lanejob.Running, Node: "amid1"},
		"9": {Phase: lanejob.Queued, Reason: "Resources"},
	}
	for id, w := range want {
		if got := jobs[id].state(); got != w {
			t.Errorf("job %s: %+v, want %+v", id, got, w)
		}
	}
}

// Later Slurm versions (OpenAPI v0.0.40 on) give the state as a list of flags and the exit
// code as an object; the shape below is theirs.
func TestParseSqueueLater(t *testing.T) {
	b := []byte(`{"jobs": [
	  {"job_id": 41, "job_state": ["FAILED"], "state_reason": "NonZeroExitCode", "nodes": "n3",
	   "exit_code": {"status": ["EXITED"], "return_code": {"set": true, "infinite": false, "number": 2}, "signal": {"id": {"set": false, "infinite": false, "number": 0}, "name": ""}}},
	  {"job_id": 42, "job_state": ["RUNNING", "COMPLETING"], "state_reason": "None", "nodes": "n4",
	   "exit_code": {"status": ["SUCCESS"], "return_code": {"set": true, "infinite": false, "number": 0}, "signal": {"id": {"set": false, "infinite": false, "number": 0}, "name": ""}}},
	  {"job_id": 43, "job_state": ["PREEMPTED"], "state_reason": "None", "nodes": "n5", "exit_code": {"status": ["SIGNALED"], "return_code": {"set": true, "infinite": false, "number": 0}, "signal": {"id": {"set": true, "infinite": false, "number": 15}, "name": "TERM"}}}
	], "errors": []}`)
	jobs, err := parseSqueueJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	if s := jobs["41"].state(); s.Outcome != lanejob.Failed || s.Reason != "FAILED (NonZeroExitCode), exit status 2" {
		t.Errorf("41: %+v", s)
	}
	if s := jobs["42"].state(); s.Phase != lanejob.Running {
		t.Errorf("42: %+v", s)
	}
	if s := jobs["43"].state(); s.Outcome != lanejob.Lost || s.Node != "n5" {
		t.Errorf("43: %+v", s)
	}
	if _, err := parseSqueueJSON([]byte(`{"jobs": [{"job_id": 1, "job_state": 7}]}`)); err == nil {
		t.Error("a job state that is a number was read")
	}
}

// The formats with explicit fields, where a Slurm speaks no JSON or for sacct.
func TestParseFields(t *testing.T) {
	jobs, err := parseSqueueFields([]byte("12|RUNNING|None|n1\n13|PENDING|Priority|\n"))
	if err != nil || jobs["12"].state().Phase != lanejob.Running || jobs["13"].state().Reason != "Priority" {
		t.Errorf("squeue: %+v %v", jobs, err)
	}
	if _, err := parseSqueueFields([]byte("12 RUNNING\n")); err == nil {
		t.Error("a line without the fields was read")
	}
	acct, err := parseSacct([]byte("14|CANCELLED by 1000|None|n2|0:15\n15|NODE_FAIL|None|n3|0:0\n16|TIMEOUT|None|n1|0:0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s := acct["14"].state(); s.Outcome != lanejob.Cancelled || s.Reason != "by uid 1000" {
		t.Errorf("14: %+v", s)
	}
	if s := acct["15"].state(); s.Outcome != lanejob.Lost {
		t.Errorf("15: %+v", s)
	}
	if s := acct["16"].state(); s.Outcome != lanejob.TimedOut {
		t.Errorf("16: %+v", s)
	}
}

// A job asks Slurm for what its lane needs: the place's cores, twice the plan's memory and
// the overhead, a GPU on a GPU place, the time limit and a margin in whole minutes, the
// settings' partition and account, and a name with the run and lane ids.
func TestArgs(t *testing.T) {
	l := &Launcher{o: Options{Partition: "gpu", Account: "radiology", Memory: 2 << 30, Program: "/opt/amid/bin/amid", Args: []string{"--qos=short"}}}
	j := &lanejob.Job{Dir: "/shared/run/lanes/2d/f0/r0/job", Spec: "/shared/run/lanes/2d/f0/r0/job/spec.json", Name: lanejob.JobName("run 7", "2d.f0"),
		Place: run.Place{Name: "slurm-gpu0", Device: GPUDevice, Workers: 8}, Memory: 3 << 30, Limit: 10 * time.Minute}
	got := strings.Join(l.Args(j, "job.sh"), " ")
	// 2 × 3 GiB + 1 GiB = 7168 MiB; 10 min + 5 min + 1 min (a tenth) = 16 min.
	want := "--parsable --job-name=amid-run_7-2d.f0 --nodes=1 --ntasks=1 --cpus-per-task=8 --mem=7168M --no-requeue " +
		"--output=/shared/run/lanes/2d/f0/r0/job/slurm-%j.out --chdir=/shared/run/lanes/2d/f0/r0/job --gres=gpu:1 --time=16 " +
		"--partition=gpu --account=radiology --qos=short job.sh"
	if got != want {
		t.Errorf("sbatch %s\nwant  %s", got, want)
	}
	j.Place, j.Memory, j.Limit = run.Place{Name: "slurm0", Device: "cpu", Workers: 4}, 0, 0
	l.o.Partition, l.o.Account, l.o.Args = "", "", nil
	if got := strings.Join(l.Args(j, "job.sh"), " "); strings.Contains(got, "--gres") || strings.Contains(got, "--time") || !strings.Contains(got, "--mem=2048M") {
		t.Errorf("a CPU lane with no memory estimate or limit: sbatch %s", got)
	}
	if s := l.Script(j); !strings.Contains(s, "exec '/opt/amid/bin/amid' lane exec '/shared/run/lanes/2d/f0/r0/job/spec.json'") || !strings.Contains(s, `AMID_LANE_JOB="$SLURM_JOB_ID"`) {
		t.Errorf("script:\n%s", s)
	}
}
