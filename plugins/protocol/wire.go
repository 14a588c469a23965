package protocol

import (
	"time"

	"amid/plugins/compute"
	"amid/plugins/protocol/internal/pb"
)

// Conversions between the hand-written types and the generated wire types.

func taskToPB(t Task) *pb.Task {
	return &pb.Task{Kind: t.Kind, Dims: int32(t.Dims), Metric: t.Metric, Spec: t.Spec}
}

func taskFromPB(t *pb.Task) Task {
	if t == nil {
		return Task{}
	}
	return Task{Kind: t.Kind, Dims: int(t.Dims), Metric: t.Metric, Spec: t.Spec}
}

func casesToPB(cs []Case) []*pb.Case {
	out := make([]*pb.Case, len(cs))
	for i, c := range cs {
		out[i] = &pb.Case{Id: c.ID, Images: c.Images, Label: c.Label}
	}
	return out
}

func casesFromPB(cs []*pb.Case) []Case {
	out := make([]Case, len(cs))
	for i, c := range cs {
		out[i] = Case{ID: c.GetId(), Images: c.GetImages(), Label: c.GetLabel()}
	}
	return out
}

func describeToPB(r *DescribeResponse) *pb.DescribeResponse {
	tasks := make([]*pb.TaskKind, len(r.Tasks))
	for i, t := range r.Tasks {
		dims := make([]int32, len(t.Dims))
		for j, d := range t.Dims {
			dims[j] = int32(d)
		}
		tasks[i] = &pb.TaskKind{Kind: t.Kind, Dims: dims}
	}
	return &pb.DescribeResponse{
		Name: r.Name, Version: r.Version, ProtocolVersion: int32(r.ProtocolVersion),
		Tasks: tasks, Metrics: r.Metrics, ConfigSchema: r.ConfigSchema, Hardware: r.Hardware,
		Compute: computeToPB(r.Compute),
	}
}

func describeFromPB(r *pb.DescribeResponse) *DescribeResponse {
	tasks := make([]TaskKind, len(r.GetTasks()))
	for i, t := range r.GetTasks() {
		dims := make([]int, len(t.GetDims()))
		for j, d := range t.GetDims() {
			dims[j] = int(d)
		}
		tasks[i] = TaskKind{Kind: t.GetKind(), Dims: dims}
	}
	return &DescribeResponse{
		Name: r.GetName(), Version: r.GetVersion(), ProtocolVersion: int(r.GetProtocolVersion()),
		Tasks: tasks, Metrics: r.GetMetrics(), ConfigSchema: r.GetConfigSchema(), Hardware: r.GetHardware(),
		Compute: computeFromPB(r.GetCompute()),
	}
}

func computeToPB(c compute.Identity) *pb.Compute {
	if c.IsZero() {
		return nil
	}
	return &pb.Compute{Engine: c.Engine, Device: c.Device, Blas: c.BLAS, Core: c.Core, Workers: int32(c.Workers)}
}

func computeFromPB(c *pb.Compute) compute.Identity {
	return compute.Identity{Engine: c.GetEngine(), Device: c.GetDevice(), BLAS: c.GetBlas(), Core: c.GetCore(), Workers: int(c.GetWorkers())}
}

func planRequestToPB(r *PlanRequest) *pb.PlanRequest {
	return &pb.PlanRequest{Fingerprint: r.Fingerprint, Task: taskToPB(r.Task), Calibration: r.Calibration}
}

func planRequestFromPB(r *pb.PlanRequest) *PlanRequest {
	return &PlanRequest{Fingerprint: r.GetFingerprint(), Task: taskFromPB(r.GetTask()), Calibration: r.GetCalibration()}
}

func planToPB(r *PlanResponse) *pb.PlanResponse {
	cs := make([]*pb.Candidate, len(r.Candidates))
	for i, c := range r.Candidates {
		cs[i] = &pb.Candidate{Name: c.Name, Config: c.Config, Rationale: c.Rationale, StepSeconds: c.StepSeconds, MemoryBytes: c.MemoryBytes, Device: c.Device, MaxSteps: c.MaxSteps}
	}
	return &pb.PlanResponse{Candidates: cs, Skipped: r.Skipped, Calibration: r.Calibration}
}

func planFromPB(r *pb.PlanResponse) *PlanResponse {
	cs := make([]Candidate, len(r.GetCandidates()))
	for i, c := range r.GetCandidates() {
		cs[i] = Candidate{Name: c.GetName(), Config: c.GetConfig(), Rationale: c.GetRationale(), StepSeconds: c.GetStepSeconds(), MemoryBytes: c.GetMemoryBytes(), Device: c.GetDevice(), MaxSteps: c.GetMaxSteps()}
	}
	return &PlanResponse{Candidates: cs, Skipped: r.GetSkipped(), Calibration: r.GetCalibration()}
}

func trainRequestToPB(r *TrainRequest) *pb.TrainRequest {
	return &pb.TrainRequest{
		LaneId: r.LaneID, Task: taskToPB(r.Task), Config: r.Config,
		Train: casesToPB(r.Train), Validation: casesToPB(r.Validation),
		WorkDir: r.WorkDir, ResumeFrom: r.ResumeFrom, Seed: r.Seed,
		TimeLimitMs: r.TimeLimit.Milliseconds(), Until: r.Until,
	}
}

func trainRequestFromPB(r *pb.TrainRequest) *TrainRequest {
	return &TrainRequest{
		LaneID: r.GetLaneId(), Task: taskFromPB(r.GetTask()), Config: r.GetConfig(),
		Train: casesFromPB(r.GetTrain()), Validation: casesFromPB(r.GetValidation()),
		WorkDir: r.GetWorkDir(), ResumeFrom: r.GetResumeFrom(), Seed: r.GetSeed(),
		TimeLimit: time.Duration(r.GetTimeLimitMs()) * time.Millisecond, Until: r.GetUntil(),
	}
}

func progressToPB(p *Progress) *pb.Progress {
	return &pb.Progress{
		Step: p.Step, TotalSteps: p.TotalSteps, Epoch: p.Epoch, Losses: p.Losses,
		Validation: p.Validation, SamplesPerSecond: p.SamplesPerSecond,
		EtaMs: p.ETA.Milliseconds(), Checkpoint: p.Checkpoint, Message: p.Message,
	}
}

func progressFromPB(p *pb.Progress) *Progress {
	return &Progress{
		Step: p.GetStep(), TotalSteps: p.GetTotalSteps(), Epoch: p.GetEpoch(), Losses: p.GetLosses(),
		Validation: p.GetValidation(), SamplesPerSecond: p.GetSamplesPerSecond(),
		ETA: time.Duration(p.GetEtaMs()) * time.Millisecond, Checkpoint: p.GetCheckpoint(), Message: p.GetMessage(),
	}
}

func resultToPB(r *TrainResult) *pb.TrainResult {
	return &pb.TrainResult{Checkpoint: r.Checkpoint, Sha256: r.SHA256, Steps: r.Steps, Validation: r.Validation, Compute: computeToPB(r.Compute)}
}

func resultFromPB(r *pb.TrainResult) *TrainResult {
	return &TrainResult{Checkpoint: r.GetCheckpoint(), SHA256: r.GetSha256(), Steps: r.GetSteps(), Validation: r.GetValidation(), Compute: computeFromPB(r.GetCompute())}
}

func predictRequestToPB(r *PredictRequest) *pb.PredictRequest {
	return &pb.PredictRequest{
		Task: taskToPB(r.Task), Config: r.Config, Checkpoint: r.Checkpoint,
		Cases: casesToPB(r.Cases), OutputDir: r.OutputDir, Probabilities: r.Probabilities,
	}
}

func predictRequestFromPB(r *pb.PredictRequest) *PredictRequest {
	return &PredictRequest{
		Task: taskFromPB(r.GetTask()), Config: r.GetConfig(), Checkpoint: r.GetCheckpoint(),
		Cases: casesFromPB(r.GetCases()), OutputDir: r.GetOutputDir(), Probabilities: r.GetProbabilities(),
	}
}

func predictToPB(r *PredictResponse) *pb.PredictResponse {
	ps := make([]*pb.Prediction, len(r.Predictions))
	for i, p := range r.Predictions {
		ps[i] = &pb.Prediction{CaseId: p.CaseID, Files: p.Files, Confidence: p.Confidence, Probabilities: p.Probabilities}
	}
	return &pb.PredictResponse{Predictions: ps, Compute: computeToPB(r.Compute)}
}

func predictFromPB(r *pb.PredictResponse) *PredictResponse {
	ps := make([]Prediction, len(r.GetPredictions()))
	for i, p := range r.GetPredictions() {
		ps[i] = Prediction{CaseID: p.GetCaseId(), Files: p.GetFiles(), Probabilities: p.GetProbabilities()}
		if p.Confidence != nil {
			c := p.GetConfidence()
			ps[i].Confidence = &c
		}
	}
	return &PredictResponse{Predictions: ps, Compute: computeFromPB(r.GetCompute())}
}
