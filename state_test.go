package elastico

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/elastico/elastico/internal/chunk"
)

func validState() State {
	return State{
		Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Cluster: Cluster{Nodes: []Node{{
			ID: "n0", CPU: 32, RAM: 256,
			GPUs: []GPU{{ID: "g0", Model: "V100", Memory: 16, Shared: true}, {ID: "g1", Model: "V100", Memory: 16, Shared: true}},
		}}},
		Jobs: []Job{{
			ID:             "train",
			Class:          Training,
			Floor:          10,
			ReferenceBatch: 32,
			Profiles: []Profile{
				{Config: Configuration{ID: "b32", BatchSize: 32, GPUs: 1}, Demand: Demand{GPUs: 1, SM: 0.5, GPUMemory: 6, CPU: 4, RAM: 16}, Throughput: 100, Efficiency: 1},
				{Config: Configuration{ID: "b64x2", BatchSize: 64, GPUs: 2}, Demand: Demand{GPUs: 2, SM: 0.7, GPUMemory: 9, CPU: 4, RAM: 16}, Throughput: 180, Efficiency: 0.95},
			},
			Running: &Assignment{ConfigID: "b32", GPUs: []string{"g1"}},
		}, {
			ID:       "serve",
			Class:    Inference,
			Profiles: []Profile{{Class: Inference, Config: Configuration{ID: "kv40", KVCacheFrac: 0.4, MaxSeqs: 64}, Demand: Demand{GPUs: 1, SM: 0.3, GPUMemory: 8, CPU: 2, RAM: 8}, Throughput: 900}},
		}},
	}
}

func TestValidate(t *testing.T) {
	if s := validState(); s.Validate() != nil {
		t.Fatalf("valid state rejected: %v", s.Validate())
	}
	tests := []struct {
		name      string
		mutate    func(*State)
		wantKind  string
		wantID    string
		wantField string
	}{
		{"NaN SM demand", func(s *State) { s.Jobs[0].Profiles[1].Demand.SM = math.NaN() }, "job", "train", "Profiles[1].Demand.SM"},
		{"infinite memory demand", func(s *State) { s.Jobs[1].Profiles[0].Demand.GPUMemory = math.Inf(1) }, "job", "serve", "Profiles[0].Demand.GPUMemory"},
		{"negative CPU demand", func(s *State) { s.Jobs[0].Profiles[0].Demand.CPU = -1 }, "job", "train", "Profiles[0].Demand.CPU"},
		{"NaN throughput", func(s *State) { s.Jobs[1].Profiles[0].Throughput = math.NaN() }, "job", "serve", "Profiles[0].Throughput"},
		{"negative throughput", func(s *State) { s.Jobs[0].Profiles[1].Throughput = -5 }, "job", "train", "Profiles[1].Throughput"},
		{"infinite throughput", func(s *State) { s.Jobs[0].Profiles[1].Throughput = math.Inf(1) }, "job", "train", "Profiles[1].Throughput"},
		{"SM share above one GPU", func(s *State) { s.Jobs[0].Profiles[0].Demand.SM = 1.5 }, "job", "train", "Profiles[0].Demand.SM"},
		{"zero GPUs", func(s *State) { s.Jobs[0].Profiles[0].Demand.GPUs = 0 }, "job", "train", "Profiles[0].Demand.GPUs"},
		{"efficiency above one", func(s *State) { s.Jobs[0].Profiles[0].Efficiency = 1.2 }, "job", "train", "Profiles[0].Efficiency"},
		{"NaN counter", func(s *State) { s.Jobs[0].Profiles[0].Counters.Set(DRAMActive, math.NaN()) }, "job", "train", "Profiles[0].Counters.dram_active"},
		{"duplicate job ID", func(s *State) { s.Jobs[1].ID = "train" }, "job", "train", "ID"},
		{"empty job ID", func(s *State) { s.Jobs[1].ID = "" }, "job", "", "Jobs[1].ID"},
		{"duplicate GPU ID", func(s *State) { s.Cluster.Nodes[0].GPUs[1].ID = "g0" }, "gpu", "g0", "ID"},
		{"duplicate node ID", func(s *State) {
			s.Cluster.Nodes = append(s.Cluster.Nodes, Node{ID: "n0"})
		}, "node", "n0", "Cluster.Nodes[1].ID"},
		{"negative GPU memory", func(s *State) { s.Cluster.Nodes[0].GPUs[0].Memory = -16 }, "gpu", "g0", "Memory"},
		{"NaN node CPU", func(s *State) { s.Cluster.Nodes[0].CPU = math.NaN() }, "node", "n0", "CPU"},
		{"empty family", func(s *State) { s.Jobs[1].Profiles = nil }, "job", "serve", "Profiles"},
		{"duplicate configuration", func(s *State) { s.Jobs[0].Profiles[1].Config.ID = "b32" }, "job", "train", "Profiles[1].Config.ID"},
		{"running on a GPU that does not exist", func(s *State) { s.Jobs[0].Running.GPUs = []string{"g7"} }, "job", "train", "Running.GPUs[0]"},
		{"running under an unknown configuration", func(s *State) { s.Jobs[0].Running.ConfigID = "b128" }, "job", "train", "Running.ConfigID"},
		{"running on too few GPUs", func(s *State) { s.Jobs[0].Running.ConfigID = "b64x2" }, "job", "train", "Running.GPUs"},
		{"floor above every throughput", func(s *State) { s.Jobs[0].Floor = 500 }, "job", "train", "Floor"},
		{"NaN floor", func(s *State) { s.Jobs[0].Floor = math.NaN() }, "job", "train", "Floor"},
		{"negative weight", func(s *State) { s.Jobs[1].Weight = -1 }, "job", "serve", "Weight"},
		{"unknown class", func(s *State) { s.Jobs[1].Class = Class(7) }, "job", "serve", "Class"},
		{"NaN carried price", func(s *State) { s.Carry.Prices[CPU] = math.NaN() }, "state", "", "Carry.Prices[CPU]"},
		{"negative carried penalty", func(s *State) {
			s.Carry.Penalties = map[string]map[string]float64{"serve": {"kv40": -1}}
		}, "job", "serve", "Carry.Penalties[kv40]"},
		{"two bad penalties: the first in family order", func(s *State) {
			s.Carry.Penalties = map[string]map[string]float64{"train": {"b64x2": math.Inf(1), "b32": math.NaN()}}
		}, "job", "train", "Carry.Penalties[b32]"},
		{"negative carried restart count", func(s *State) {
			s.Carry.Restarts = map[string]int{"train": 0, "serve": -1}
		}, "job", "serve", "Carry.Restarts"},
		{"zero Now", func(s *State) { s.Now = time.Time{} }, "state", "", "Now"},
		{"zero throughput", func(s *State) { s.Jobs[1].Profiles[0].Throughput = 0 }, "job", "serve", "Profiles[0].Throughput"},
		{"GPU memory in MiB", func(s *State) { s.Cluster.Nodes[0].GPUs[1].Memory = 40960 }, "gpu", "g1", "Memory"},
		{"memory demand in MiB", func(s *State) { s.Jobs[0].Profiles[1].Demand.GPUMemory = 9216 }, "job", "train", "Profiles[1].Demand.GPUMemory"},
		{"inference job with a training profile", func(s *State) { s.Jobs[1].Profiles[0].Class = Training }, "job", "serve", "Profiles[0].Class"},
		{"training job with an inference profile", func(s *State) { s.Jobs[0].Profiles[1].Class = Inference }, "job", "train", "Profiles[1].Class"},
		{"SGD without a reference batch", func(s *State) { s.Jobs[0].ReferenceBatch = 0 }, "job", "train", "ReferenceBatch"},
		{"Adam without a reference batch", func(s *State) {
			s.Jobs[0].Optimizer, s.Jobs[0].ReferenceBatch = Adam, 0
		}, "job", "train", "ReferenceBatch"},
		{"profiles for a GPU model the cluster lacks", func(s *State) {
			s.Jobs[1].Profiles[0].Hardware.GPUModel = "K80"
		}, "job", "serve", "Profiles"},
		{"running on a GPU of another model", func(s *State) {
			s.Jobs[0].Profiles[0].Hardware.GPUModel = "V100"
			s.Cluster.Nodes[0].GPUs[1].Model = "P100"
		}, "job", "train", "Running.GPUs[0]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := validState()
			tc.mutate(&s)
			err := s.Validate()
			if err == nil {
				t.Fatal("Validate accepted the state")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error %v is not a *ValidationError", err)
			}
			if ve.Kind != tc.wantKind || ve.ID != tc.wantID || ve.Field != tc.wantField {
				t.Errorf("got kind=%q id=%q field=%q (%v), want kind=%q id=%q field=%q",
					ve.Kind, ve.ID, ve.Field, err, tc.wantKind, tc.wantID, tc.wantField)
			}
			if tc.wantID != "" && !strings.Contains(err.Error(), tc.wantID) {
				t.Errorf("message %q does not name %q", err, tc.wantID)
			}
		})
	}
}

// TestValidateEdges: what the new input rules still accept.
func TestValidateEdges(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*State)
	}{
		{"a GPU of exactly MaxGPUMemory", func(s *State) { s.Cluster.Nodes[0].GPUs[0].Memory = MaxGPUMemory }},
		{"AdaScale needs no reference batch", func(s *State) {
			s.Jobs[0].Optimizer, s.Jobs[0].ReferenceBatch = AdaScale, 0
		}},
		{"one batch size runs unscaled", func(s *State) {
			s.Jobs[0].ReferenceBatch = 0
			s.Jobs[0].Profiles[1].Config.BatchSize = 32
		}},
		{"no batch knob", func(s *State) {
			s.Jobs[0].ReferenceBatch = 0
			s.Jobs[0].Profiles[0].Config.BatchSize, s.Jobs[0].Profiles[1].Config.BatchSize = 0, 0
		}},
		{"a profile of another model beside one of the cluster's", func(s *State) {
			s.Jobs[0].Profiles[1].Hardware.GPUModel = "K80"
		}},
		{"an empty GPUModel runs on any GPU", func(s *State) {
			s.Jobs[0].Profiles[0].Hardware.GPUModel = ""
			s.Cluster.Nodes[0].GPUs[1].Model = "A100"
		}},
		{"a GPU without a model runs any profile", func(s *State) {
			s.Jobs[1].Profiles[0].Hardware.GPUModel = "K80"
			s.Cluster.Nodes[0].GPUs[0].Model = ""
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := validState()
			tc.mutate(&s)
			if err := s.Validate(); err != nil {
				t.Errorf("Validate = %v, want nil", err)
			}
		})
	}
}

// TestValidateMessages: the new rules' messages say what to do.
func TestValidateMessages(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*State)
		want   string
	}{
		{"zero Now", func(s *State) { s.Now = time.Time{} }, "elastico: state: Now is the zero time"},
		{"GPU memory in MiB", func(s *State) { s.Cluster.Nodes[0].GPUs[1].Memory = 40960 },
			`elastico: gpu "g1": Memory is 40960 GiB, above MaxGPUMemory (1024): MiB given as GiB?`},
		{"inference job with a training profile", func(s *State) { s.Jobs[1].Profiles[0].Class = Training },
			`elastico: job "serve": Profiles[0].Class is training, but the job is inference`},
		{"SGD without a reference batch", func(s *State) { s.Jobs[0].ReferenceBatch = 0 },
			`elastico: job "train": ReferenceBatch is unset, but Optimizer sgd scales the learning rate from it and the family has batch sizes 32 and 64`},
		{"zero throughput", func(s *State) { s.Jobs[0].Profiles[1].Throughput = 0 },
			`elastico: job "train": Profiles[1].Throughput is 0`},
		{"no GPU of the family's models", func(s *State) {
			s.Jobs[1].Profiles[0].Hardware.GPUModel = "K80"
			s.Cluster.Nodes[0].GPUs[1].Model = "P100"
		}, `elastico: job "serve": Profiles are for GPU models K80 only, and the cluster's GPUs are V100, P100: a profile runs only on GPUs of its Hardware.GPUModel (an empty GPUModel, on a profile or a GPU, runs on any)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := validState()
			tc.mutate(&s)
			if err := s.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("Validate = %v, want a message starting %q", err, tc.want)
			}
		})
	}
}

// TestProfileValidate: a profile on its own (as a profiler stores it) gets
// the profile rules, zero throughput and memory in MiB included.
func TestProfileValidate(t *testing.T) {
	ok := validState().Jobs[0].Profiles[0]
	ok.Family = "resnet50"
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid profile rejected: %v", err)
	}
	for _, tc := range []struct {
		name      string
		mutate    func(*Profile)
		wantField string
	}{
		{"zero throughput", func(p *Profile) { p.Throughput = 0 }, "Profile.Throughput"},
		{"memory demand in MiB", func(p *Profile) { p.Demand.GPUMemory = 6144 }, "Profile.Demand.GPUMemory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ok
			tc.mutate(&p)
			var ve *ValidationError
			if err := p.Validate(); !errors.As(err, &ve) || ve.Kind != "profile" || ve.ID != "resnet50" || ve.Field != tc.wantField {
				t.Errorf("Validate = %v, want profile %q field %q", err, "resnet50", tc.wantField)
			}
		})
	}
}

// TestValidateIgnoresPenaltiesNoOneReads: a carried penalty of a job that
// left, or of a configuration its family no longer has, is never read.
func TestValidateIgnoresPenaltiesNoOneReads(t *testing.T) {
	s := validState()
	s.Carry.Penalties = map[string]map[string]float64{
		"left":  {"b32": math.NaN()},
		"train": {"b128": -1, "b32": 0.5},
	}
	if err := s.Validate(); err != nil {
		t.Errorf("Validate = %v, want nil", err)
	}
}

func TestMarketValidate(t *testing.T) {
	m := Market{Capacity: Vector{4, 64, 32, 256}, Bidders: []Bidder{{Weight: 1, Options: []Option{{Goodput: 1, Demand: Vector{1, 8, 4, 16}}}}}}
	if err := m.Validate(); err != nil {
		t.Fatalf("valid market rejected: %v", err)
	}
	bad := m
	bad.Bidders = []Bidder{{Weight: 0, Options: m.Bidders[0].Options}}
	if err := bad.Validate(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "Weight") {
		t.Errorf("zero weight: got %v", err)
	}
	bad = m
	bad.Bidders = []Bidder{{Weight: 1, Options: []Option{{Goodput: 1, Demand: Vector{math.NaN(), 0, 0, 0}}}}}
	if err := bad.Validate(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "Options[0].Demand[SM]") {
		t.Errorf("NaN demand: got %v", err)
	}
	bad = m
	bad.Capacity[RAM] = -1
	if err := bad.Validate(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "Capacity[RAM]") {
		t.Errorf("negative capacity: got %v", err)
	}
}

func TestVectorDominantShare(t *testing.T) {
	c := Vector{4, 64, 32, 256}
	if got := (Vector{1, 32, 4, 16}).DominantShare(c); got != 0.5 {
		t.Errorf("DominantShare = %g, want 0.5 (memory)", got)
	}
	if got := (Vector{0, 0, 1, 0}).DominantShare(Vector{1, 1, 0, 1}); !math.IsInf(got, 1) {
		t.Errorf("demand on a zero capacity: got %g, want +Inf", got)
	}
	if !(Vector{1, 1, 1, 1}).LessEq(Vector{1, 1, 1, 1}) || (Vector{1.1, 0, 0, 0}).LessEq(Vector{1, 1, 1, 1}) {
		t.Error("LessEq")
	}
}

func TestLaunchParamsEnv(t *testing.T) {
	l := LaunchParams{BatchSize: 64, AMP: true, LRScale: 2, MemoryFraction: 0.25, MaxSplitSizeMB: 512,
		MPSPinnedMemLimit: "0=10G", MPSActiveThreadPercentage: 50}
	got := strings.Join(l.Env(), " ")
	want := "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=10G " +
		"ELASTICO_AMP=1 ELASTICO_BATCH_SIZE=64 ELASTICO_CHECKPOINTING=0 ELASTICO_LR_SCALE=2 ELASTICO_MEMORY_FRACTION=0.2500 " +
		"PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:512"
	if got != want {
		t.Errorf("Env() =\n%s\nwant\n%s", got, want)
	}
}

func TestMarketValidateDoesNotAllocate(t *testing.T) {
	m := Market{Capacity: Vector{4, 64, 32, 256}}
	for range 100 {
		m.Bidders = append(m.Bidders, Bidder{Weight: 1, Options: []Option{{Goodput: 1, Demand: Vector{1, 8, 4, 16}}, {Goodput: 0.5, Demand: Vector{0.5, 4, 2, 8}}}})
	}
	if n := testing.AllocsPerRun(10, func() { _ = m.Validate() }); n != 0 {
		t.Errorf("Validate of a valid market allocates %v times", n)
	}
}

// TestValidateLargeStateFirstProblem: a State large enough for Validate to
// check its jobs in parallel chunks still reports the first problem in
// job order, an ID's before the rest of the same job's.
func TestValidateLargeStateFirstProblem(t *testing.T) {
	const n = 3 * chunk.Min
	if s := benchState(n, 4096); s.Validate() != nil {
		t.Fatalf("valid state rejected: %v", s.Validate())
	}
	badWeight := func(i int) func(*State) { return func(s *State) { s.Jobs[i].Weight = math.NaN() } }
	dupID := func(i int) func(*State) { return func(s *State) { s.Jobs[i].ID = s.Jobs[0].ID } }
	tests := []struct {
		name      string
		mutate    []func(*State)
		wantID    string
		wantField string
	}{
		{"one bad job late", []func(*State){badWeight(n - 1)}, "job-6143", "Weight"},
		{"the earlier of two bad jobs in different chunks", []func(*State){badWeight(5000), badWeight(100)}, "job-100", "Weight"},
		{"a bad job before a duplicate ID", []func(*State){badWeight(4000), dupID(4500)}, "job-4000", "Weight"},
		{"a duplicate ID before a bad job", []func(*State){dupID(1000), badWeight(3000)}, "job-0", "ID"},
		{"a duplicate ID and a bad weight on one job", []func(*State){badWeight(2600), dupID(2600)}, "job-0", "ID"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := benchState(n, 4096)
			for _, m := range tc.mutate {
				m(s)
			}
			var ve *ValidationError
			if err := s.Validate(); !errors.As(err, &ve) {
				t.Fatalf("Validate = %v, want a *ValidationError", err)
			}
			if ve.ID != tc.wantID || ve.Field != tc.wantField {
				t.Errorf("got id=%q field=%q (%v), want id=%q field=%q", ve.ID, ve.Field, ve, tc.wantID, tc.wantField)
			}
		})
	}
}
