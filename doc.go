// Package elastico is the vocabulary of a GPU co-location scheduler that a
// cluster manager embeds: which configuration each job runs under (batch
// size, activation checkpointing, mixed precision, GPU count, KV-cache
// budget) and which GPUs it shares. It implements ElastiCo (arXiv
// 2608.07971) and the fixes its public review asked for.
//
// Like etcd's raft, the core does no I/O. A host (a Volcano or Slurm fork, a
// simulator, a unit test) runs one cycle per epoch:
//
//  1. Build a [State]: the time, the [Cluster] (nodes, GPUs), every [Job] with
//     its family of [Profile]s (one per [Configuration], built by package rst
//     from measurements), the job's floor, weight and current [Assignment],
//     and the [Carry] the previous Plan returned.
//  2. Call [Scheduler.Epoch]. The default scheduler is pds.New(pds.Config{}):
//     it reserves headroom for waiting jobs, lets a market of shadow prices
//     ([PriceSolver], package esp) choose a configuration per job, places
//     them on GPUs ([Placer], package placement), asks a [Predictor] (package
//     iac) how co-located jobs would slow each other, and repeats with
//     penalties until every pair that shares a GPU passes the sharing rule
//     (iac.Sharing: by value while jobs wait, each job within its own
//     MaxSlowdown and floor). The throughputs the host measures
//     (Job.Observed) correct the predictor from what really co-ran.
//  3. Apply the [Plan]: its [Action]s (preempt, migrate, reconfigure, start)
//     each carry [LaunchParams] (memory fraction, MPS limits, batch size,
//     learning-rate scale) that the host passes to the job; every waiting
//     job's [Decision] has a [Status] saying why it waits. Keep Plan.Carry for
//     the next State.
//
// From a cluster and two jobs to an applied Plan (the package's Example
// runs a longer one):
//
//	gpu := func(id string) elastico.GPU { return elastico.GPU{ID: id, Memory: 80, Shared: true} }
//	node := elastico.Node{ID: "n0", CPU: 64, RAM: 512, GPUs: []elastico.GPU{gpu("g0"), gpu("g1")}}
//	job := func(id string) elastico.Job {
//	return elastico.Job{ID: id, Optimizer: elastico.AdaScale, Profiles: []elastico.Profile{{
//		Family: id, Config: elastico.Configuration{ID: "x1", BatchSize: 64, GPUs: 1},
//		Demand: elastico.Demand{GPUs: 1, SM: 0.5, GPUMemory: 20, CPU: 4, RAM: 16},
//		Throughput: 100, // samples/s, measured (package profiler) or from rst
//	}}}
//	}
//	st := elastico.State{Now: time.Now(), Cluster: elastico.Cluster{Nodes: []elastico.Node{node}},
//	Jobs: []elastico.Job{job("resnet"), job("bert")}}
//	s, err := pds.New(pds.Config{})
//	if err != nil { ... }
//	for {
//	plan, err := s.Epoch(ctx, &st)
//	if err != nil { ... } // a *ValidationError names the job and the field
//	for _, a := range plan.Actions {
//		run(a) // preempt, migrate, reconfigure or start, with a.Launch's parameters
//	}
//	for i, d := range plan.Decisions {
//		st.Jobs[i].Running = d.Assignment // nil: it waits, and d.Status says why
//	}
//	st.Carry = plan.Carry
//	time.Sleep(5 * time.Second) // then refresh Now, jobs, and what each measured (Job.Observed)
//	st.Now = time.Now()
//	}
//
// Data are plain structs; behaviour sits behind five small interfaces
// ([Scheduler], [PriceSolver], [Predictor], [Placer], [Profiler]), each with
// a default implementation in its own package. [State.Validate] rejects bad
// input with a [*ValidationError] that names the job and the field; every
// such error wraps [ErrInvalid]. It rejects rather than guesses: a zero
// Now, GPU memory above [MaxGPUMemory] (MiB given as GiB), a profile whose
// Class is not its job's, a zero throughput, and an SGD or Adam job whose
// family has several batch sizes but no ReferenceBatch are all errors.
//
// Clusters may mix GPU models. A profile says which model it was measured
// or estimated for (Hardware.GPUModel, spelt as the cluster's GPU.Model;
// Interpolated when nobody measured it), and its configuration runs only
// on GPUs of that model ([Profile.RunsOn]); an empty model, on a profile or
// a GPU, runs on any. A job that may run on several models has a profile
// per model for each configuration, each with its own Config.ID (package
// rst builds such families, rst.GavelFamilyOn from measured and estimated
// models), and [State.Validate] rejects a job none of whose profiles runs
// on a model the cluster has.
//
// Units: SM shares in GPUs (1.0 = all SMs of one GPU), GPU memory and host
// RAM in GiB, CPU in cores, throughput in the job's own unit per second.
//
// # The shipped measurements
//
// The module ships two public data sets of measurements. Each is read by
// one internal package, so that its file format is no API, and used in up
// to three roles, each in the package whose job it is:
//
//	source               reader           profiles (rst)       ground truth (sim)    training pairs
//	Gavel (OSDI'20)      internal/gavel   rst.GavelFamily      sim.GavelTruth        iac/gaveldata
//	Pollux (OSDI'21)     internal/pollux  rst.PolluxFamily     sim.PolluxTruth       (none)
//	Alibaba v2023        (not shipped)    (none)               sim.OpenBMix          (none)
//
// In more words:
//
//   - Gavel (MIT): throughputs of 26 training job types on V100, P100 and
//     K80, alone at 1–8 GPUs and in pairs sharing one GPU, 1.2 MB. rst
//     builds a job's profile family from them (rst.GavelFamily,
//     GavelFamilyOn, and EstimatedGavelFamily for GPUs Gavel did not
//     measure); sim builds the simulator's ground truth, throughputs and
//     co-location speeds (sim.GavelTruth, GavelMix); iac/gaveldata turns
//     the pairs into training data, from which iac's embedded model
//     (iac.Default, by examples/iactrain) and the replay's held-out models
//     are trained.
//   - Pollux (Apache-2.0): step times and gradient statistics of six jobs
//     on T4. rst builds families and noise scales (rst.PolluxFamily,
//     PolluxNoiseScale); sim builds the T4 ground truth (sim.PolluxTruth)
//     and takes statistical efficiency from it for Gavel's models. Pollux
//     measured no co-location, so it gives no training pairs.
//   - Alibaba's v2023 GPU trace states no license and is not shipped: sim
//     reads the user's copy (sim.ReadOpenB, ReadOpenBNodes) and runs each of
//     its GPU models on Gavel's measurements or an estimate from them
//     (sim.OpenBMix, OpenBTruth).
//
// The roles sit apart so that a program links what it uses: an embedder
// that imports pds (and through it iac and rst's Checker and Launch) links
// neither the data nor the training code (iac/train and its tensor
// library), and the predictor package iac carries only its trained model.
// Every role spells a GPU model as [GPU.Model] and Hardware.GPUModel do
// ("V100", "P100", "K80", "T4"); the functions that take one of Gavel's
// (rst.GavelFamily, sim.GavelTruth, GavelMix, gaveldata.Load) accept it in
// any case, and the file's own keys ("v100") stay in internal/gavel.
package elastico
