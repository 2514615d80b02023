package pds

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
	"github.com/elastico/elastico/internal/chunk"
	"github.com/elastico/elastico/placement"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestNewDefaults(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	c := s.Config()
	want := Config{
		Sharing: iac.DefaultSharing, Reservation: DefaultReservation, Alpha: DefaultAlpha,
		SwitchingCost: DefaultSwitchingCost, Fairness: DefaultFairness, Delta: DefaultDelta, Rounds: DefaultRounds, PenaltyDecay: DefaultPenaltyDecay,
		RestartTime: DefaultRestartTime, Horizon: DefaultHorizon, MinRunTime: DefaultMinRunTime, ReserveAfter: DefaultReserveAfter,
	}
	if diff := cmp.Diff(want, c, cmpopts.IgnoreFields(Config{}, "Clock")); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	if c.Clock == nil || s.solver == nil || s.placer == nil || s.pred == nil {
		t.Errorf("a default component is missing: clock %v solver %v placer %v predictor %v", c.Clock != nil, s.solver, s.placer, s.pred)
	}
}

func TestNewRejects(t *testing.T) {
	tests := []struct {
		name      string
		cfg       Config
		wantField string
	}{
		{"reservation above one", Config{Reservation: 1.5}, "Reservation"},
		{"negative reservation", Config{Reservation: -0.1}, "Reservation"},
		{"NaN alpha", Config{Alpha: math.NaN()}, "Alpha"},
		{"huge alpha", Config{Alpha: 1e6}, "Alpha"},
		{"negative switching cost", Config{SwitchingCost: -1}, "SwitchingCost"},
		{"fairness too large", Config{Fairness: MaxFairness + 1}, "Fairness"},
		{"switching cost above one", Config{SwitchingCost: 2}, "SwitchingCost"},
		{"infinite delta", Config{Delta: math.Inf(1)}, "Delta"},
		{"negative rounds", Config{Rounds: -1}, "Rounds"},
		{"too many rounds", Config{Rounds: 11}, "Rounds"},
		{"decay above one", Config{PenaltyDecay: 1.1}, "PenaltyDecay"},
		{"tolerance below one", Config{Sharing: iac.PaperSharing(iac.Tolerance{Tau0: 0.9})}, "Tau0"},
		{"NaN beta", Config{Sharing: iac.PaperSharing(iac.Tolerance{Tau0: 1.1, Beta: math.NaN()})}, "Beta"},
		{"negative margin", Config{Sharing: iac.Sharing{Margin: -0.1}}, "Margin"},
		{"quiet below one", Config{Sharing: iac.Sharing{Quiet: 0.5}}, "Quiet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.wantField) {
				t.Errorf("New = %v, want an ErrConfig naming %s", err, tt.wantField)
			}
		})
	}
}

// TestDefaultPlacer: the default placer is the one Config.Placer's doc
// tells a user to build with other settings, placement.New(
// placement.Config{ShareLast: true}), so that building it changes only
// what the user changes.
func TestDefaultPlacer(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	pl, ok := s.placer.(*placement.Placer)
	if !ok {
		t.Fatalf("the default placer is a %T", s.placer)
	}
	doc, err := placement.New(placement.Config{ShareLast: true})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(doc.Config(), pl.Config(), cmpopts.IgnoreUnexported(placement.Config{}), cmpopts.IgnoreFields(placement.Config{}, "Sharing")); diff != "" {
		t.Errorf("default placer's config (-documented +got):\n%s", diff)
	}
}

// stateOf runs one epoch of a fresh random state and applies it, so that
// the returned state has running jobs, co-locations and a Carry.
func stateOf(t testing.TB, s *Scheduler, r *rand.Rand, nodes, jobs int) *elastico.State {
	t.Helper()
	st := randomState(r, nodes, jobs)
	plan, err := s.Epoch(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	next := apply(st, plan)
	// Some jobs leave, some arrive.
	more := randomState(r, 0, jobs/3)
	for i := range more.Jobs {
		more.Jobs[i].ID = "new-" + more.Jobs[i].ID
	}
	kept := next.Jobs[:0]
	for _, j := range next.Jobs {
		if r.IntN(6) > 0 {
			kept = append(kept, j)
		}
	}
	next.Jobs = append(kept, more.Jobs...)
	return next
}

// TestEpochGuarantees checks every guarantee of Epoch on random states over
// several epochs: capacity, floors, gangs, no co-location above tolerance,
// actions consistent with decisions.
func TestEpochGuarantees(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	tol := iac.Tolerance{Tau0: 1.2} // β = 0: τ is τ0 whatever the queue
	for trial := range 40 {
		cfg := Config{Predictor: randomPredictor, Sharing: iac.PaperSharing(tol), Clock: fixedClock()}
		switch trial % 4 {
		case 1:
			cfg.Rounds = 1
		case 2:
			cfg.Reservation = 1
		case 3:
			cfg.Ablation.NoReservation = true
		}
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		st := stateOf(t, s, r, 1+r.IntN(6), 2+r.IntN(25))
		for epoch := range 3 {
			plan, err := s.Epoch(context.Background(), st)
			if err != nil {
				t.Fatalf("trial %d epoch %d: %v", trial, epoch, err)
			}
			checkPlan(t, st, plan, randomPredictor, iac.MaxSlowdown(tol.Tau0))
			if t.Failed() {
				t.Fatalf("trial %d epoch %d failed", trial, epoch)
			}
			st = apply(st, plan)
		}
	}
}

// TestEpochDeterministic: the same State and Config give the same Plan
// (durations aside), from one Scheduler twice and from two Schedulers.
func TestEpochDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	cfg := Config{Predictor: randomPredictor, Clock: fixedClock()}
	s1, _ := New(cfg)
	s2, _ := New(cfg)
	ignore := cmpopts.IgnoreFields(elastico.Stats{}, "Prices", "Placement", "Interference", "Total")
	for trial := range 20 {
		st := stateOf(t, s1, r, 2+r.IntN(5), 5+r.IntN(30))
		a, err := s1.Epoch(context.Background(), st)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := s1.Epoch(context.Background(), st)
		c, _ := s2.Epoch(context.Background(), st)
		if diff := cmp.Diff(a, b, ignore); diff != "" {
			t.Fatalf("trial %d: same scheduler, two plans (-first +second):\n%s", trial, diff)
		}
		if diff := cmp.Diff(a, c, ignore); diff != "" {
			t.Fatalf("trial %d: two schedulers, two plans (-first +second):\n%s", trial, diff)
		}
	}
}

// TestEpochDoesNotMutate: Epoch leaves the State as it found it.
func TestEpochDoesNotMutate(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	s, _ := New(Config{Predictor: randomPredictor})
	st := stateOf(t, s, r, 4, 20)
	before := *st
	before.Jobs = append([]elastico.Job(nil), st.Jobs...)
	if _, err := s.Epoch(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&before, st); diff != "" {
		t.Errorf("Epoch changed the State (-before +after):\n%s", diff)
	}
}

func TestEpochValidation(t *testing.T) {
	s, _ := New(Config{Predictor: randomPredictor})
	tests := []struct {
		name      string
		mutate    func(*elastico.State)
		wantField string
	}{
		{"NaN demand", func(s *elastico.State) { s.Jobs[0].Profiles[0].Demand.SM = math.NaN() }, "Profiles[0].Demand.SM"},
		{"empty family", func(s *elastico.State) { s.Jobs[1].Profiles = nil }, "Profiles"},
		{"duplicate job", func(s *elastico.State) { s.Jobs[1].ID = s.Jobs[0].ID }, "ID"},
		{"unknown GPU", func(s *elastico.State) {
			s.Jobs[0].Running = &elastico.Assignment{ConfigID: s.Jobs[0].Profiles[0].Config.ID, GPUs: make([]string, s.Jobs[0].Profiles[0].Demand.GPUs)}
		}, "Running.GPUs[0]"},
		{"NaN carried price", func(s *elastico.State) { s.Carry.Prices[elastico.SM] = math.NaN() }, "Carry.Prices[SM]"},
		{"negative penalty", func(s *elastico.State) {
			s.Carry.Penalties = map[string]map[string]float64{"j00": {"c0": -1}}
		}, "Carry.Penalties[c0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := randomState(rand.New(rand.NewPCG(1, 1)), 2, 3)
			tt.mutate(st)
			_, err := s.Epoch(context.Background(), st)
			if !errors.Is(err, elastico.ErrInvalid) || !strings.HasPrefix(err.Error(), "pds: ") || !strings.Contains(err.Error(), tt.wantField) {
				t.Errorf("Epoch = %v, want a pds: error wrapping ErrInvalid naming %s", err, tt.wantField)
			}
		})
	}
	if _, err := s.Epoch(context.Background(), nil); !errors.Is(err, elastico.ErrInvalid) {
		t.Errorf("Epoch(nil) = %v, want ErrInvalid", err)
	}
}

// TestEpochFloors: a job whose floor only its largest configuration meets
// runs under that one or waits; a floor no configuration meets is invalid.
func TestEpochFloors(t *testing.T) {
	st := &elastico.State{Now: day0, Cluster: elastico.Cluster{Nodes: []elastico.Node{{ID: "n", CPU: 64, RAM: 512, GPUs: []elastico.GPU{
		{ID: "g0", Memory: 40, Shared: true}, {ID: "g1", Memory: 40, Shared: true},
	}}}}}
	fam := []elastico.Profile{
		{Family: "a", Config: elastico.Configuration{ID: "small", BatchSize: 16}, Demand: elastico.Demand{GPUs: 1, SM: 0.3, GPUMemory: 8, CPU: 2, RAM: 8}, Throughput: 60},
		{Family: "a", Config: elastico.Configuration{ID: "big", BatchSize: 64}, Demand: elastico.Demand{GPUs: 1, SM: 0.9, GPUMemory: 30, CPU: 2, RAM: 8}, Throughput: 100},
	}
	for i := range 3 {
		st.Jobs = append(st.Jobs, elastico.Job{ID: string(rune('a' + i)), Profiles: fam, Floor: 90, ReferenceBatch: 16, Arrival: day0})
	}
	s, _ := New(Config{Predictor: tablePredictor{}})
	plan, err := s.Epoch(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	checkPlan(t, st, plan, nil, iac.Limit{})
	got := map[string]int{}
	for _, d := range plan.Decisions {
		if d.Assignment != nil {
			got[d.Assignment.ConfigID]++
		} else {
			got[d.Status.Code.String()]++
		}
	}
	// Two GPUs hold two "big" (SM 0.9 each); the third job waits rather
	// than run "small" below its floor.
	want := map[string]int{"big": 2, "Unaffordable": 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	st.Jobs[0].Floor = 200
	if _, err := s.Epoch(context.Background(), st); !errors.Is(err, elastico.ErrInvalid) || !strings.Contains(err.Error(), "Floor") {
		t.Errorf("a floor above every configuration: %v, want an error naming Floor", err)
	}
}

// expiring is a context whose deadline passes when the test calls
// expire, not when a clock says so: what TestEpochDeadline checks must not
// depend on how loaded the machine is.
type expiring struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newExpiring() *expiring {
	return &expiring{Context: context.Background(), done: make(chan struct{})}
}

func (c *expiring) expire()               { c.once.Do(func() { close(c.done) }) }
func (c *expiring) Done() <-chan struct{} { return c.done }
func (c *expiring) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// stallSolver wraps a PriceSolver: from its call stallFrom on, the
// deadline passes (expire) and it blocks until the context is done, like a
// solver overrunning the epoch's deadline.
type stallSolver struct {
	elastico.PriceSolver
	calls, stallFrom int
	expire           func()
}

func (s *stallSolver) Solve(ctx context.Context, m *elastico.Market, sol *elastico.Solution) error {
	s.calls++
	if s.calls >= s.stallFrom {
		s.expire()
		<-ctx.Done()
		return ctx.Err()
	}
	return s.PriceSolver.Solve(ctx, m, sol)
}

// stallPlacer is stallSolver's counterpart for a Placer.
type stallPlacer struct {
	elastico.Placer
	calls, stallFrom int
	expire           func()
	expired          time.Time
}

func (s *stallPlacer) Place(ctx context.Context, req *elastico.PlacementRequest, out *elastico.Placement) error {
	s.calls++
	if s.calls >= s.stallFrom {
		s.expired = time.Now()
		s.expire()
		<-ctx.Done()
		return ctx.Err()
	}
	return s.Placer.Place(ctx, req, out)
}

// TestEpochDeadline: when the deadline passes, Epoch returns at once with
// the best feasible plan so far, marked Truncated.
func TestEpochDeadline(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	// Without reservations: a held job that starts where it fits changes
	// which pairs round 1 finds, and this State must have some.
	// In the paper's market, which co-locates the jobs itself: the
	// violations of round 1 need a second round.
	cfg := Config{Predictor: randomPredictor, Sharing: iac.PaperSharing(iac.Tolerance{Tau0: 1.1}), ReserveAfter: -1, Ablation: Ablation{SMMarket: true}}
	base, _ := New(cfg)
	st := stateOf(t, base, r, 4, 30)
	// Every pair of llama jobs interferes (1.4 > 1.1): the first round
	// finds violations, so a second one starts.
	for i := range st.Jobs {
		for k := range st.Jobs[i].Profiles {
			st.Jobs[i].Profiles[k].Family = "llama"
		}
	}
	check := func(name string, plan *elastico.Plan, err error, rounds int) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !plan.Stats.Truncated || plan.Stats.Rounds != rounds {
			t.Errorf("%s: Truncated %v after %d rounds, want true after %d", name, plan.Stats.Truncated, plan.Stats.Rounds, rounds)
		}
		checkPlan(t, st, plan, randomPredictor, iac.MaxSlowdown(1.1))
		if rounds == 0 {
			// Nothing was decided: every job keeps what it has.
			for i, d := range plan.Decisions {
				if st.Jobs[i].Running != nil && d.Assignment == nil && d.Status.Code != elastico.Preempted {
					t.Errorf("%s: job %s: %v", name, d.JobID, d.Status)
				}
			}
		}
	}

	// The prices of round 1 overrun a real deadline: nothing runs before
	// them but the market's construction, so the deadline passes there or
	// during them, and no round completes either way.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	s, _ := New(Config{PriceSolver: &stallSolver{PriceSolver: base.solver, stallFrom: 1, expire: func() {}}, Predictor: cfg.Predictor, Sharing: cfg.Sharing, Ablation: cfg.Ablation})
	begin := time.Now()
	plan, err := s.Epoch(ctx, st)
	cancel()
	if el := time.Since(begin); el > 5*time.Second {
		t.Errorf("Epoch took %v past a 50ms deadline", el)
	}
	check("prices of round 1 stall", plan, err, 0)

	// The deadline passes in the placement of round stallFrom: the rounds
	// before it make the plan.
	for _, stallFrom := range []int{1, 2} {
		ctx := newExpiring()
		pl, _ := placement.New(placement.Config{Sharing: iac.MaxSlowdown(1.1), LoudLastResort: true})
		stall := &stallPlacer{Placer: pl, stallFrom: stallFrom, expire: ctx.expire}
		s, _ := New(Config{Placer: stall, Predictor: cfg.Predictor, Sharing: cfg.Sharing, ReserveAfter: cfg.ReserveAfter, Ablation: cfg.Ablation})
		plan, err := s.Epoch(ctx, st)
		if el := time.Since(stall.expired); el > 5*time.Second {
			t.Errorf("placement of round %d stalls: Epoch returned %v after the deadline", stallFrom, el)
		}
		check(fmt.Sprintf("placement of round %d stalls", stallFrom), plan, err, stallFrom-1)
	}

	// A context already done: the status quo, at once.
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	plan, err = base.Epoch(ctx, st)
	if err != nil || !plan.Stats.Truncated || plan.Stats.Rounds != 0 {
		t.Fatalf("cancelled context: %v, %+v", err, plan)
	}
	checkPlan(t, st, plan, randomPredictor, iac.MaxSlowdown(1.1))
	if len(plan.Actions) != 0 {
		for _, a := range plan.Actions {
			if a.Kind != elastico.Preempt {
				t.Errorf("status quo plan acts: %v", a)
			}
		}
	}
}

// failSolver fails: Epoch must report it, not hide it.
type failSolver struct{}

func (failSolver) Solve(context.Context, *elastico.Market, *elastico.Solution) error {
	return errors.New("boom")
}

func TestEpochComponentError(t *testing.T) {
	s, _ := New(Config{PriceSolver: failSolver{}, Predictor: randomPredictor})
	_, err := s.Epoch(context.Background(), randomState(rand.New(rand.NewPCG(1, 2)), 2, 4))
	if err == nil || !strings.Contains(err.Error(), "price solver: boom") {
		t.Errorf("Epoch = %v, want the solver's error", err)
	}
}

// TestEpochReshapeThatDoesNotFitKeepsTheJob: the market grows a running job
// into a configuration that fits the cluster's totals but no GPU; the job
// keeps running as it is instead of being preempted.
func TestEpochReshapeThatDoesNotFitKeepsTheJob(t *testing.T) {
	prof := func(fam, id string, sm, mem, tput float64) elastico.Profile {
		return elastico.Profile{Family: fam, Config: elastico.Configuration{ID: id, BatchSize: 32}, Demand: elastico.Demand{GPUs: 1, SM: sm, GPUMemory: mem, CPU: 1, RAM: 4}, Throughput: tput}
	}
	st := &elastico.State{
		Now: day0,
		Cluster: elastico.Cluster{Nodes: []elastico.Node{{ID: "n", CPU: 32, RAM: 256, GPUs: []elastico.GPU{
			{ID: "g0", Memory: 40, Shared: true}, {ID: "g1", Memory: 40, Shared: true},
		}}}},
		Jobs: []elastico.Job{
			{ID: "a", Profiles: []elastico.Profile{prof("a", "small", 0.4, 10, 60), prof("a", "big", 0.5, 20, 100)}, Running: &elastico.Assignment{ConfigID: "small", GPUs: []string{"g0"}}},
			{ID: "b", Profiles: []elastico.Profile{prof("b", "only", 0.5, 25, 100)}, Running: &elastico.Assignment{ConfigID: "only", GPUs: []string{"g0"}}},
			{ID: "c", Profiles: []elastico.Profile{prof("c", "only", 0.9, 30, 100)}, Running: &elastico.Assignment{ConfigID: "only", GPUs: []string{"g1"}}},
		},
	}
	s, _ := New(Config{Predictor: tablePredictor{}})
	plan, err := s.Epoch(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	checkPlan(t, st, plan, nil, iac.Limit{})
	got, acts := outcome(plan)
	want := map[string]string{"a": "small@g0", "b": "only@g0", "c": "only@g1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if len(acts) != 0 {
		t.Errorf("actions %v, want none", acts)
	}
}

// TestEpochAdaptiveTolerance: a pair predicted 1.2× (above τ0 ≈ 1.11)
// starts sharing a GPU while a queue presses (Eq. 11); once it
// shares, it is split only above τ's cap τ0·(1+βmax) ≈ 1.61, so that the
// queue its start shrank does not split it again.
func TestEpochAdaptiveTolerance(t *testing.T) {
	job := func(id string, sm float64, running bool) elastico.Job {
		j := elastico.Job{ID: id, Arrival: day0, Profiles: []elastico.Profile{{Family: id, Config: elastico.Configuration{ID: "c", BatchSize: 32},
			Demand: elastico.Demand{GPUs: 1, SM: sm, GPUMemory: 10, CPU: 1, RAM: 4}, Throughput: 100}}}
		if running {
			j.Running = &elastico.Assignment{ConfigID: "c", GPUs: []string{"g0"}}
		}
		return j
	}
	for _, tt := range []struct {
		name     string
		queue    bool
		yRunning bool
		slowdown float64
		wantY    string
	}{
		{"a queue: τ rises, the pair starts", true, false, 1.2, "c@g0"},
		{"no queue: the pair that shares keeps sharing", false, true, 1.2, "c@g0"},
		{"a queue: a pair above τ's cap is split", true, true, 1.7, "Preempted"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := &elastico.State{Now: day0, Cluster: elastico.Cluster{Nodes: []elastico.Node{{ID: "n", CPU: 32, RAM: 256, GPUs: []elastico.GPU{{ID: "g0", Memory: 40, Shared: true}}}}},
				Jobs: []elastico.Job{job("x", 0.4, true), job("y", 0.4, tt.yRunning)}}
			if tt.queue { // a job that can never start here, but presses
				st.Jobs = append(st.Jobs, elastico.Job{ID: "big", Arrival: day0, Profiles: []elastico.Profile{{Family: "big", Config: elastico.Configuration{ID: "c", GPUs: 1},
					Demand: elastico.Demand{GPUs: 1, SM: 0.9, GPUMemory: 35, CPU: 1, RAM: 4}, Throughput: 1}}})
			}
			pred := tablePredictor{"y|x": tt.slowdown}
			s, _ := New(Config{Predictor: pred, Sharing: iac.PaperSharing(iac.DefaultTolerance)})
			plan, err := s.Epoch(context.Background(), st)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := outcome(plan)
			if got["x"] != "c@g0" || got["y"] != tt.wantY {
				t.Errorf("x %s, y %s; want x c@g0, y %s", got["x"], got["y"], tt.wantY)
			}
		})
	}
}

// countingSolver counts a PriceSolver's calls.
type countingSolver struct {
	elastico.PriceSolver
	calls int
}

func (s *countingSolver) Solve(ctx context.Context, m *elastico.Market, sol *elastico.Solution) error {
	s.calls++
	return s.PriceSolver.Solve(ctx, m, sol)
}

// TestEpochLocalRound: the round after a violation re-prices only the
// violating pair's jobs. In the paper's case (x/fast slows beside y; x's
// penalized fast configuration gives way to lean) the second round settles
// with no second call to the price solver; where the local round leaves a
// violation (every pair of jobs interferes), a full round follows it.
func TestEpochLocalRound(t *testing.T) {
	st, pred := scenarioState(t, "interference-reshaped")
	def, _ := New(Config{})
	solver := &countingSolver{PriceSolver: def.solver}
	paper := iac.PaperSharing(iac.DefaultTolerance) // the scenario's rule
	s, _ := New(Config{PriceSolver: solver, Predictor: pred, Sharing: paper})
	plan, err := s.Epoch(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := outcome(plan)
	want := map[string]string{"x": "lean@g0", "y": "kv30@g0"}
	if diff := cmp.Diff(want, got); diff != "" || plan.Stats.Rounds != 2 || solver.calls != 1 {
		t.Errorf("rounds %d, price solver called %d times (want 2 rounds, 1 call); plan (-want +got):\n%s", plan.Stats.Rounds, solver.calls, diff)
	}

	// x and y both run on the one GPU, and x slows beside y under either
	// of its configurations beyond what a pair that shares as before may
	// (τ's cap, 1.61): the local round keeps the pair apart, x finds no
	// other GPU, and the plan settles there; one of the pair waits.
	st.Jobs[0].Running = &elastico.Assignment{ConfigID: "fast", GPUs: []string{"g0"}}
	st.Jobs[1].Running = &elastico.Assignment{ConfigID: "kv30", GPUs: []string{"g0"}}
	pred = tablePredictor{"x/fast|y": 1.8, "x/lean|y": 1.7}
	solver = &countingSolver{PriceSolver: def.solver}
	s, _ = New(Config{PriceSolver: solver, Predictor: pred, Sharing: paper})
	plan, err = s.Epoch(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Stats.Rounds != 2 || solver.calls != 1 {
		t.Errorf("rounds %d, price solver called %d times; want 2 rounds (full, local), 1 call: %v", plan.Stats.Rounds, solver.calls, plan.Decisions)
	}
	if n := len(plan.Actions); n != 1 {
		t.Errorf("%d actions, want one job of the pair stopped: %v", n, plan.Actions)
	}
	checkPlan(t, st, plan, pred, s.Config().Sharing.Keep())
}

// TestEpochLargeStateSameOnOneCore: a State large enough for Epoch to
// build its market on several goroutines gets the very plan it gets on
// one.
func TestEpochLargeStateSameOnOneCore(t *testing.T) {
	if testing.Short() {
		t.Skip("a 4,200-job epoch")
	}
	def, err := New(Config{Clock: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	st := benchStateAfter(t, def, 2*chunk.Min+100, 4096, 0, 0)
	plan := func() *elastico.Plan {
		s, _ := New(Config{Clock: fixedClock()})
		p, err := s.Epoch(context.Background(), st)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	many := plan()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	one := plan()
	if diff := cmp.Diff(one, many); diff != "" {
		t.Errorf("plans differ (-one core +several):\n%s", diff)
	}
	if many.Stats.Rounds == 0 || len(many.Actions) == 0 {
		t.Errorf("the epoch did nothing: %+v", many.Stats)
	}
}
