package iac_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
	"github.com/elastico/elastico/iac/iactest"
	"github.com/elastico/elastico/iac/internal/synthetic"
)

// TestSlowdownPreparedIsSlowdown holds the prepared path to the plain one,
// bit for bit, on every ordered pair: a scheduler that prepares its
// profiles must make the same plan as one that does not. The trained model
// reads counters, pairwise sums and masks (synthetic data lacks some
// counters); the default reads task attributes only.
func TestSlowdownPreparedIsSlowdown(t *testing.T) {
	def, err := iac.Default()
	if err != nil {
		t.Fatal(err)
	}
	odd := iactest.Profiles()
	odd = append(odd, elastico.Profile{Family: "nan", Params: math.NaN(), Throughput: math.Inf(1), Config: elastico.Configuration{KVCacheFrac: math.NaN()}})
	for _, tc := range []struct {
		name     string
		m        *iac.MLP
		profiles []elastico.Profile
	}{
		{"trained on counters", trainQuick(t, 3), append(synthetic.Dataset(3, 4, 9).Profiles, odd...)},
		{"default", def, append(synthetic.Dataset(4, 4, 11).Profiles, odd...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pairwise := slices.ContainsFunc(tc.m.Inputs(), func(in string) bool { return strings.HasPrefix(in, "pair_") })
			if !pairwise && tc.name != "default" {
				t.Fatal("the model has no pairwise inputs: the test would not exercise them")
			}
			n := tc.m.PreparedLen()
			var prep []float64
			for i := range tc.profiles {
				prep = tc.m.AppendPrepared(prep, &tc.profiles[i])
			}
			if len(prep) != n*len(tc.profiles) {
				t.Fatalf("%d prepared values for %d profiles, want %d each", len(prep), len(tc.profiles), n)
			}
			for i := range tc.profiles {
				for j := range tc.profiles {
					want := tc.m.Slowdown(&tc.profiles[i], &tc.profiles[j])
					got, err := tc.m.SlowdownPrepared(prep[i*n:(i+1)*n], prep[j*n:(j+1)*n])
					if err != nil {
						t.Fatal(err)
					}
					if math.Float64bits(got) != math.Float64bits(want) {
						t.Fatalf("%s beside %s: prepared %v, plain %v", tc.profiles[i].Family, tc.profiles[j].Family, got, want)
					}
				}
			}
		})
	}
}

func TestSlowdownPreparedRejectsWrongLength(t *testing.T) {
	m := trainQuick(t, 3)
	p := iactest.Profiles()[1]
	good := m.AppendPrepared(nil, &p)
	for _, tc := range []struct {
		name     string
		v, a     []float64
		wantFail bool
	}{
		{"both prepared", good, good, false},
		{"short victim", good[:len(good)-1], good, true},
		{"long aggressor", good, append(good[:len(good):len(good)], 0), true},
		{"nil", nil, nil, true},
	} {
		_, err := m.SlowdownPrepared(tc.v, tc.a)
		if (err != nil) != tc.wantFail {
			t.Errorf("%s: error %v, want an error: %v", tc.name, err, tc.wantFail)
		}
	}
}

func TestSlowdownPreparedAllocatesNothing(t *testing.T) {
	m, err := iac.Default()
	if err != nil {
		t.Fatal(err)
	}
	ps := iactest.Profiles()
	a := m.AppendPrepared(nil, &ps[1])
	b := m.AppendPrepared(nil, &ps[2])
	if n := testing.AllocsPerRun(100, func() { _, _ = m.SlowdownPrepared(a, b) }); n != 0 {
		t.Errorf("SlowdownPrepared allocates %v times", n)
	}
	buf := make([]float64, 0, 4*m.PreparedLen())
	if n := testing.AllocsPerRun(100, func() { buf = m.AppendPrepared(buf[:0], &ps[3]) }); n != 0 {
		t.Errorf("AppendPrepared into a large enough slice allocates %v times", n)
	}
}
