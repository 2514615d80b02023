package sim

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"

	"github.com/elastico/elastico"
)

// oracleCases returns every configuration the oracle may be asked about on
// t, with its profile: each family's standard ones, and those a workload
// binds from a trace (requests sized by the trace, off the standard grid;
// inference jobs).
func oracleCases(t *testing.T, tr *Truth, trace string) ([]Variant, []elastico.Profile) {
	t.Helper()
	var cs []Variant
	var ps []elastico.Profile
	for _, f := range tr.Families() {
		cs = append(cs, f.Configs...)
		ps = append(ps, tr.Profiles(f, f.Configs, nil)...)
	}
	trc, err := ReadShipped(trace)
	if err != nil {
		t.Fatal(err)
	}
	jobs, _, err := tr.Workload(trc, WorkloadOptions{GPUs: 64, Load: 1, Jobs: 300, Seed: 3, InferenceFraction: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		cs = append(cs, j.Configs...)
		ps = append(ps, j.Profiles...)
	}
	return cs, ps
}

// The oracle answers, for every pair, the factor the simulator applies to
// the victim beside the aggressor.
func TestOracleAgreesWithTheSimulatorOnEveryPair(t *testing.T) {
	t4, err := PolluxTruth()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		truth *Truth
		trace string
	}{{testTruth(t), "gavel/0e4a51.trace"}, {t4, ShippedPolluxAll}} {
		tr := c.truth
		o, err := NewOracle(tr)
		if err != nil {
			t.Fatal(err)
		}
		cs, ps := oracleCases(t, tr, c.trace)
		offGrid := 0
		for i := range cs {
			k, err := o.Kind(&ps[i])
			if err != nil || k != cs[i].Kind {
				t.Fatalf("%s %s/%s: kind %d, %v; the simulator's is %d", tr.GPU.Model, ps[i].Family, ps[i].Config.ID, k, err, cs[i].Kind)
			}
			f, _ := tr.Family(ps[i].Family)
			if !isStandard(f, cs[i].ID) {
				offGrid++
			}
		}
		if offGrid == 0 {
			t.Errorf("%s: no configuration off the families' standard grid was checked", tr.GPU.Model)
		}
		// Every pair of kinds, through one profile of each.
		byKind := map[int]int{}
		for i := range cs {
			if _, ok := byKind[cs[i].Kind]; !ok {
				byKind[cs[i].Kind] = i
			}
		}
		if len(byKind) != len(tr.Kinds()) {
			t.Errorf("%s: %d of %d kinds reached", tr.GPU.Model, len(byKind), len(tr.Kinds()))
		}
		for _, v := range byKind {
			for _, a := range byKind {
				got := o.Slowdown(&ps[v], &ps[a])
				if want := 1 / tr.kindSpeed(cs[v].Kind, cs[a].Kind); got != want || got < 1 {
					t.Fatalf("%s: %s/%s beside %s/%s: oracle %g, simulator 1/%g", tr.GPU.Model, ps[v].Family, ps[v].Config.ID, ps[a].Family, ps[a].Config.ID, got, 1/want)
				}
			}
		}
	}
}

func isStandard(f *Family, id string) bool {
	for _, c := range f.Configs {
		if c.ID == id {
			return true
		}
	}
	return false
}

// Two jobs pinned to one GPU finish when the oracle's slowdowns say.
func TestOracleMatchesASharedRun(t *testing.T) {
	tr := testTruth(t)
	o, err := NewOracle(tr)
	if err != nil {
		t.Fatal(err)
	}
	cases := [][2][3]any{
		{{"ResNet-18", 16, 2.0}, {"Transformer", 32, 50.0}},
		{{"LM", 5, 3.0}, {"A3C", 0, 40.0}},
		{{"Recommendation", 512, 1.0}, {"ResNet-50", 16, 30.0}},
	}
	for _, c := range cases {
		a := testJob(t, tr, "a", c[0][0].(string), c[0][1].(int), 1, 0, c[0][2].(float64)*3600)
		b := testJob(t, tr, "b", c[1][0].(string), c[1][1].(int), 1, 0, c[1][2].(float64)*3600)
		r, err := Run(context.Background(), Config{Truth: tr, Cluster: testCluster(t, 1), Jobs: []Job{a, b}, SMOversubscription: 2,
			Policy: pinPolicy(map[string][]string{"a": {"gpu0000"}, "b": {"gpu0000"}})})
		if err != nil {
			t.Fatal(err)
		}
		// a finishes first, slowed by b; b then runs alone.
		ta := a.Dedicated * o.Slowdown(&a.Profiles[0], &b.Profiles[0])
		tb := ta + b.Dedicated - ta/o.Slowdown(&b.Profiles[0], &a.Profiles[0])
		for i, want := range []float64{ta, tb} {
			if got := r.Jobs[i].Finish; math.Abs(got-want) > 1e-6*want {
				t.Errorf("%s beside %s: job %s finishes at %.3f s, the oracle says %.3f", a.Family.Name, b.Family.Name, r.Jobs[i].ID, got, want)
			}
		}
	}
}

func TestOracleRejectsStrangers(t *testing.T) {
	tr := testTruth(t)
	o, err := NewOracle(tr)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := tr.Family("ResNet-50")
	good := tr.Profiles(f, f.Configs[:1], nil)[0]
	for _, c := range []struct {
		name, field string
		edit        func(p *elastico.Profile)
	}{
		{"unknown family", "Family", func(p *elastico.Profile) { p.Family = "GPT-9" }},
		{"another GPU", "Hardware.GPUModel", func(p *elastico.Profile) { p.Hardware.GPUModel = "K80" }},
		{"wrong class", "Class", func(p *elastico.Profile) { p.Class = elastico.Inference }},
		{"foreign ID", "Config.ID", func(p *elastico.Profile) { p.Config.ID = "big" }},
		{"padded ID", "Config.ID", func(p *elastico.Profile) { p.Config.ID = "b016x1" }},
		{"unmeasured batch", "Config.ID", func(p *elastico.Profile) { p.Config.ID = "b17x1" }},
		{"GPUs disagree", "Demand.GPUs", func(p *elastico.Profile) { p.Config.ID = "b16x2" }},
	} {
		p := good
		c.edit(&p)
		if _, err := o.Kind(&p); err == nil || !strings.Contains(err.Error(), c.field) || !strings.Contains(err.Error(), p.Family) {
			t.Errorf("%s: error %v, want one naming %s and the family", c.name, err, c.field)
		}
		if s := o.Slowdown(&p, &good); !math.IsNaN(s) {
			t.Errorf("%s: slowdown %g, want NaN (never safe)", c.name, s)
		}
	}
	if _, err := NewOracle(nil); err == nil {
		t.Error("an oracle of no truth")
	}
	if n := testing.AllocsPerRun(100, func() { o.Slowdown(&good, &good) }); n != 0 {
		t.Errorf("Slowdown allocates %g times", n)
	}
}

// A policy that reads the ground truth is bound to the run's and labelled
// a bound in the reports.
func TestReadingTruthIsBoundAndLabelled(t *testing.T) {
	tr := testTruth(t)
	var got *Truth
	newPol := ReadingTruth("a perfect pinner", func(t *Truth) (elastico.Scheduler, error) {
		got = t
		return fifoWhole{}, nil
	})
	pol, err := newPol()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pol.Epoch(context.Background(), &elastico.State{}); err == nil {
		t.Error("an unbound policy planned")
	}
	e := &Experiment{Truth: tr, Trace: shippedGavel(t), GPUs: 8, Seeds: []uint64{1}, Workload: WorkloadOptions{Jobs: 4, Load: 1},
		Policies: []Policy{{Name: "pinner", New: newPol}, {Name: "fifo", New: func() (elastico.Scheduler, error) { return fifoWhole{}, nil }}}}
	out, err := e.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got != tr || out.Bounds["pinner"] != "a perfect pinner" || len(out.Bounds) != 1 {
		t.Fatalf("bound to %p (want %p), bounds %v", got, tr, out.Bounds)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, Summarize(out, "fifo")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"pinner (bound: a perfect pinner)", "pinner is a bound, not a result"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	failing := ReadingTruth("x", func(*Truth) (elastico.Scheduler, error) { return nil, nil })
	p, _ := failing()
	if _, err := Run(context.Background(), Config{Truth: tr, Cluster: testCluster(t, 1), Policy: p, Name: "x",
		Jobs: []Job{testJob(t, tr, "a", "ResNet-50", 16, 1, 0, 60)}}); err == nil || !strings.Contains(err.Error(), "nil scheduler") {
		t.Errorf("a bound whose build returns nil: %v", err)
	}
}
