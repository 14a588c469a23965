package cli

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"amid/assets"
	"amid/host/config"
	"amid/host/planner"
	"amid/host/planner/llm"
	hostrun "amid/host/run"
	"amid/host/task"
)

// executorFlags are the flags that say where a run trains its lane-folds.
func executorFlags(cmd *cobra.Command, e *config.Executor, resume bool) {
	f := cmd.Flags()
	kinds := config.ExecutorLocal + ", " + config.ExecutorProcess + " or " + config.ExecutorSlurm
	if resume {
		f.StringVar(&e.Kind, "executor", "", "where lane-folds train: "+kinds+" (default: where the run trained before)")
	} else {
		f.StringVar(&e.Kind, "executor", "", "where lane-folds train: "+kinds+" (default: $"+config.EnvExecutor+", else local)")
	}
	f.StringVar(&e.Partition, "partition", "", "with --executor slurm: the partition the jobs ask for (default: $"+config.EnvSlurmPartition+", else the cluster's)")
	f.StringVar(&e.Account, "account", "", "with --executor slurm: the account the jobs are charged to (default: $"+config.EnvSlurmAccount+")")
	f.IntVar(&e.Jobs, "slurm-jobs", 0, "with --executor slurm: lane-folds at once on CPUs (default: $"+config.EnvSlurmJobs+", else 4)")
	f.IntVar(&e.CPUs, "slurm-cpus", 0, "with --executor slurm: cores a job, the lane's worker split (default: $"+config.EnvSlurmCPUs+", else 4)")
	f.IntVar(&e.GPUs, "slurm-gpus", 0, "with --executor slurm: lane-folds at once on a GPU each (default: $"+config.EnvSlurmGPUs+", else 0)")
}

func runCmd() *cobra.Command {
	var o hostrun.Options
	var plannerName, llmURL, llmModel, challenge string
	var ex config.Executor
	cmd := &cobra.Command{
		Use:   "run TASK|FOLDER --out DIR",
		Short: "Develop a model for a task end to end: profile, plan, train, verify, export",
		Long: `run reads the task definition TASK (YAML), finds its cases in the data folder (--data, default
the task file's folder), profiles the data and checks its contract, locks patient-level folds,
plans lanes with the plugins (rules, or an LLM with --planner llm), trains them within the
budget, picks the best on validation with the host's own metric, writes the submission,
verifies it (and grades it when --answers names the private answers), and exports a model
package into DIR/package. Ctrl-C stops at a safe point; amid resume DIR continues.

TASK may also be a ReX-MLE prepared/public folder: the built-in definition of the challenge
whose files are there (and whose submission columns match its sample_submission.csv) is used;
--challenge picks one when several fit (PUMA's two tracks share their data).

When the test images are DICOM, the predictions are also written as DICOM SEG objects that
reference their source series. --deidentify makes the run pseudonymous from its start: case
ids taken from file or folder names become keyed pseudonyms in everything the run writes,
and every DICOM object in the package goes through PS3.15's Basic Application Level
Confidentiality Profile (its UIDs replaced, so it no longer matches the studies in PACS).

--from PACKAGE improves a model package of the task: the package is checked as amid predict
checks it, its model continues on the training cases and on the cases readers corrected
(those its audit log records, and those of the run or predict-run folders --corrections
names, by default the package's run folder when it is a run's own RUN/package; a correction
whose file changed after it was recorded is refused), within the budget.
Its locked folds are kept and the new cases dealt to them by the same patient-level rule; a
corrected test case leaves the test set; with --answers the old model is scored beside the
new on the test cases neither trained on. The new package names its parent's manifest, and
its audit log continues the parent's.

The LLM planner talks to an OpenAI-compatible endpoint (--llm-url, --llm-model) with the key
from $AMID_LLM_API_KEY; it is sent the fingerprint, the task text and results, never pixels
or patient identifiers.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Task = args[0]
			if st, err := os.Stat(o.Task); err == nil && st.IsDir() {
				path, id, err := importReX(o.Task, challenge)
				if err != nil {
					return err
				}
				defer os.Remove(path)
				fmt.Fprintf(cmd.ErrOrStderr(), "amid: %s is a prepared %s folder\n", o.Task, id)
				if o.Data == "" {
					o.Data = o.Task
				}
				o.Task = path
			}
			env, done, err := runEnv(cmd.ErrOrStderr(), ex, false)
			if err != nil {
				return err
			}
			defer done()
			p, spec, err := chosenPlanner(plannerName, llmURL, llmModel, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			o.Planner, o.PlannerSpec = p, &spec
			r, err := hostrun.New(o, env)
			if err != nil {
				return err
			}
			return execute(cmd, r)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Dir, "out", "", "the run folder (required)")
	f.StringVar(&o.Data, "data", "", "the data folder (default: the task file's folder)")
	f.DurationVar(&o.Budget, "budget", 0, "wall-clock budget, e.g. 20m (default: the task's, else 20m)")
	f.StringVar(&plannerName, "planner", "rules", "rules or llm")
	f.StringVar(&llmURL, "llm-url", "", "the LLM endpoint's base URL (OpenAI-compatible), for --planner llm")
	f.StringVar(&llmModel, "llm-model", "", "the LLM's model name, for --planner llm")
	f.StringVar(&challenge, "challenge", "", "with TASK a prepared ReX-MLE folder: the challenge id, when the folder fits several")
	f.StringVar(&o.Answers, "answers", "", "private answers folder: grade the submission with the challenge's grader")
	f.IntVar(&o.Folds, "folds", 5, "cross-validation folds")
	f.IntVar(&o.Finalists, "finalists", 2, "lanes trained on more than the first fold")
	f.Int64Var(&o.Seed, "seed", 42, "seed of the folds and the training")
	f.IntVar(&o.Steps, "steps", 0, "train each lane this many steps in its first round and twice as many in each later one, rather than by time (two runs with the same seed then choose alike on any executor)")
	f.StringVar(&o.Final, "final", "", "the final model: fold-ensemble or all-data (default: the plan's rule chooses by the winner's curve and the time left)")
	f.StringVar(&o.From, "from", "", "a model package of the task (folder or zip) to improve: its model continues on the training cases and the recorded corrections")
	f.StringSliceVar(&o.Corrections, "corrections", nil, "with --from: run or predict-run folders whose recorded corrections are learned from too (comma-separated or repeated)")
	f.BoolVar(&o.Deidentify, "deidentify", false, "pseudonymous case ids throughout the run, and PS3.15's Basic Profile on every DICOM object of the package (choose it before the run starts)")
	executorFlags(cmd, &ex, false)
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func resumeCmd() *cobra.Command {
	var o hostrun.ResumeOptions
	var ex config.Executor
	cmd := &cobra.Command{
		Use:   "resume RUN",
		Short: "Continue a run that stopped (Ctrl-C, a crash, a killed process) from its last checkpoints",
		Long: `resume continues the run in the folder RUN at the phase and fold where it stopped, with the
planner it was started with. An LLM planner is rebuilt from the endpoint the run recorded
(--llm-url and --llm-model replace it) with the key from $AMID_LLM_API_KEY or the variable the
run recorded; when that endpoint is not configured or does not answer, the run says so and
continues with the rules. --planner rules|llm replaces the recorded planner.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			env, done, err := runEnv(cmd.ErrOrStderr(), ex, true)
			if err != nil {
				return err
			}
			defer done()
			o.Log = llmLog(cmd.ErrOrStderr())
			r, err := hostrun.Reopen(cmd.Context(), args[0], o, env)
			if err != nil {
				return err
			}
			return execute(cmd, r)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Planner, "planner", "", "rules or llm (default: the planner the run was started with)")
	f.StringVar(&o.LLM.BaseURL, "llm-url", "", "the LLM endpoint's base URL (default: the one the run recorded)")
	f.StringVar(&o.LLM.Model, "llm-model", "", "the LLM's model name (default: the one the run recorded)")
	executorFlags(cmd, &ex, true)
	return cmd
}

func reportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "report RUN",
		Short: "Print a run's report: lanes, folds, scores, the choice and why",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := hostrun.LoadState(args[0])
			if err != nil {
				return err
			}
			_, err = io.WriteString(cmd.OutOrStdout(), hostrun.Report(st))
			return err
		},
	}
}

// runEnv opens the plugin catalog for a run, its executor the settings' with the flags'
// fields in place (for a resumed run, in place of the ones it recorded); call done when
// the run ends.
func runEnv(stderr io.Writer, ex config.Executor, resume bool) (hostrun.Env, func(), error) {
	if err := ex.Validate(); err != nil {
		return hostrun.Env{}, nil, err
	}
	h, err := openHost(stderr)
	if err != nil {
		return hostrun.Env{}, nil, err
	}
	if resume {
		h.ExecutorOverride = ex
	} else {
		h.Executor = h.Executor.Merge(ex)
	}
	return h.Env(), func() { h.Close() }, nil
}

// chosenPlanner builds the planner --planner names and the specification the run records.
func chosenPlanner(name, url, model string, stderr io.Writer) (planner.Planner, hostrun.PlannerSpec, error) {
	switch name {
	case hostrun.PlannerRules, "":
		return nil, hostrun.PlannerSpec{Kind: hostrun.PlannerRules}, nil
	case hostrun.PlannerLLM:
		if url == "" || model == "" {
			return nil, hostrun.PlannerSpec{}, fmt.Errorf("--planner llm needs --llm-url and --llm-model")
		}
		spec := hostrun.LLMSpec(llm.Config{BaseURL: url, Model: model})
		p, err := hostrun.NewPlanner(spec, llmLog(stderr))
		return p, spec, err
	}
	return nil, hostrun.PlannerSpec{}, fmt.Errorf("--planner %q is not rules or llm", name)
}

// llmLog writes the LLM planner's events to stderr.
func llmLog(stderr io.Writer) func(event string, fields map[string]any) {
	return func(event string, fields map[string]any) {
		if msg, ok := fields["message"]; ok {
			fmt.Fprintf(stderr, "llm planner: %s: %v\n", event, msg)
			return
		}
		fmt.Fprintf(stderr, "llm planner: %s\n", event)
	}
}

// execute runs r with a progress display and Ctrl-C handling.
func execute(cmd *cobra.Command, r *hostrun.Runner) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out := cmd.ErrOrStderr()
	disp := newDisplay(out)
	r.SetEvents(disp.event)
	began := time.Now()
	err := r.Run(ctx)
	disp.close()
	st := r.State()
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(out, "stopped after %v; continue with: amid resume %s\n", time.Since(began).Round(time.Second), r.Dir())
		}
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "run %s done in %v; package: %s\n", st.ID, time.Since(began).Round(time.Second), st.Package)
	return nil
}

// importReX writes the built-in task definition that fits the prepared folder dir (or the
// challenge named) to a temporary file and returns its path and the challenge id.
func importReX(dir, challenge string) (string, string, error) {
	cands := map[string][]byte{}
	for _, id := range assets.RexMLETaskIDs() {
		if challenge != "" && id != challenge {
			continue
		}
		b, err := assets.RexMLETask(id)
		if err != nil {
			return "", "", err
		}
		cands[id] = b
	}
	if len(cands) == 0 {
		return "", "", fmt.Errorf("--challenge %q is not a ReX-MLE challenge id", challenge)
	}
	id, _, err := task.Detect(dir, cands)
	if err != nil {
		return "", "", err
	}
	f, err := os.CreateTemp("", "amid-task-*.yaml")
	if err != nil {
		return "", "", err
	}
	if _, err := f.Write(cands[id]); err != nil {
		f.Close()
		return "", "", err
	}
	return f.Name(), id, f.Close()
}
