package rst

import (
	"math"
	"strings"
	"testing"

	"github.com/elastico/elastico"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestNoiseScaleEfficiency(t *testing.T) {
	tests := []struct {
		name    string
		ns      NoiseScale
		batch   int
		wantEff float64
	}{
		{"at the base", NoiseScale{Phi: 1000, Base: 100}, 100, 1},
		{"batch = φ", NoiseScale{Phi: 1000, Base: 100}, 1000, 0.55},
		{"batch = 4φ", NoiseScale{Phi: 1000, Base: 100}, 4000, 0.22},
		{"below the base", NoiseScale{Phi: 1000, Base: 100}, 50, 1100.0 / 1050},
		{"pure noise", NoiseScale{Phi: math.Inf(1), Base: 100}, 100000, 1},
		{"no noise: only the base batch's samples count", NoiseScale{Phi: 0, Base: 100}, 400, 0.25},
		{"zero batch", NoiseScale{Phi: 1000, Base: 100}, 0, math.NaN()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.ns.Efficiency(tc.batch)
			if diff := cmp.Diff(tc.wantEff, got, cmpopts.EquateApprox(0, 1e-12), cmpopts.EquateNaNs()); diff != "" {
				t.Errorf("Efficiency(%d) mismatch (-want +got):\n%s", tc.batch, diff)
			}
		})
	}
}

// TestReshapedJobDoesTheSameWork is the Goodput "must show" of issue 2: a
// training job reshaped to a smaller batch (with its learning rate scaled)
// needs the same reference-equivalent work as the original; only the
// samples it takes to do it change.
func TestReshapedJobDoesTheSameWork(t *testing.T) {
	fit, err := PolluxNoiseScale("cifar10")
	if err != nil {
		t.Fatal(err)
	}
	ns := fit.NoiseScale // φ ≈ 5948, base 128
	job := &elastico.Job{ID: "cifar10", Class: elastico.Training, Optimizer: elastico.SGD, ReferenceBatch: 1024}
	original := &elastico.Profile{Class: elastico.Training, Config: elastico.Configuration{ID: "b1024-g4", BatchSize: 1024, GPUs: 4},
		Demand: elastico.Demand{GPUs: 4, SM: 1, GPUMemory: 6}, Throughput: 5600}
	reshaped := &elastico.Profile{Class: elastico.Training, Config: elastico.Configuration{ID: "b256-g1", BatchSize: 256, GPUs: 1},
		Demand: elastico.Demand{GPUs: 1, SM: 1, GPUMemory: 3}, Throughput: 1500}

	// The learning rate follows the batch: SGD's linear rule.
	if got := Launch(job, reshaped, []LaunchGPU{{Memory: 16}}).LRScale; got != 0.25 {
		t.Fatalf("reshaped LR scale %g, want 0.25", got)
	}

	const work = 50000 * 100.0 // 100 epochs of CIFAR-10 at the base batch, in reference samples
	// Unreshaped: the whole run at batch 1024.
	samplesOriginal := ns.Samples(work, 1024)
	// Reshaped after 30 % of the original's samples: the work done so far is
	// carried, the rest is done at batch 256.
	done := ns.Work(0.3*samplesOriginal, 1024)
	left := work - done
	samplesAfter := ns.Samples(left, 256)
	total := done + ns.Work(samplesAfter, 256)
	if math.Abs(total-work) > 1e-6*work {
		t.Fatalf("reshaped job did %.6g reference samples, want %.6g", total, work)
	}
	// At the smaller batch every sample is worth more, so fewer are needed;
	// never fewer than the work itself at the base batch.
	samplesReshaped := 0.3*samplesOriginal + samplesAfter
	if !(samplesReshaped < samplesOriginal) || samplesReshaped < work {
		t.Errorf("samples: original %.4g, reshaped %.4g, work %.4g", samplesOriginal, samplesReshaped, work)
	}
	// Completion time follows goodput, not throughput.
	timeOriginal := work / ns.Goodput(original.Throughput, 1024)
	timeReshaped := 0.3*samplesOriginal/original.Throughput + left/ns.Goodput(reshaped.Throughput, 256)
	t.Logf("cifar10 φ=%.0f: %.4g reference samples = %.4g samples at 1024 (%.0f s) or %.4g after reshaping to 256 (%.0f s); E(1024)=%.3f E(256)=%.3f",
		ns.Phi, work, samplesOriginal, timeOriginal, samplesReshaped, timeReshaped, ns.Efficiency(1024), ns.Efficiency(256))
	if timeReshaped <= timeOriginal {
		t.Errorf("a quarter of the GPUs finished sooner (%.0f s vs %.0f s): goodput ignored", timeReshaped, timeOriginal)
	}

	// The same holds in Pollux's measurements: every run of a model reached
	// the same progress, and the model predicts the samples each needed.
	for _, m := range PolluxModels() {
		fit, err := PolluxNoiseScale(m)
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for _, b := range fit.Batches {
			// Observed samples per reference sample against the model's.
			rel := math.Abs(1/b.Observed-1/b.Model) * b.Model
			worst = math.Max(worst, rel)
		}
		t.Logf("%-12s φ=%-9.4g samples for the runs' work predicted within %.1f %%", m, fit.Phi, 100*worst)
		if worst > 0.03 {
			t.Errorf("%s: the fitted model misses a run's samples by %.1f %%, want ≤ 3 %%", m, 100*worst)
		}
	}
}

// TestEfficiencyFallsAboveTheNoiseScale is the other half of the "must
// show": beyond φ, a larger batch buys less and less progress per sample.
func TestEfficiencyFallsAboveTheNoiseScale(t *testing.T) {
	for _, m := range PolluxModels() {
		fit, err := PolluxNoiseScale(m)
		if err != nil {
			t.Fatal(err)
		}
		ns := fit.NoiseScale
		phi := int(math.Round(ns.Phi))
		// Strictly falling, and at φ already at most half plus the base's share.
		prev := 1.0
		for _, b := range []int{ns.Base, 2 * ns.Base, phi / 2, phi, 2 * phi, 4 * phi, 16 * phi} {
			if b < ns.Base {
				continue
			}
			e := ns.Efficiency(b)
			if b > ns.Base && !(e < prev) {
				t.Errorf("%s: E(%d) = %.4f does not fall (previous %.4f)", m, b, e, prev)
			}
			prev = e
		}
		if e, bound := ns.Efficiency(phi), (0.5+float64(ns.Base)/(2*ns.Phi))*(1+1e-3); e > bound {
			t.Errorf("%s: E(φ) = %.4f, want ≤ %.4f", m, e, bound)
		}
		// Doubling the batch above φ doubles the samples per step but less
		// than 4/3 of the progress per step: (φ+M)/(φ+2M)·2 ≤ 4/3 for M ≥ φ.
		for _, b := range []int{phi, 3 * phi, 10 * phi} {
			gain := 2 * ns.Efficiency(2*b) / ns.Efficiency(b)
			if gain > 4.0/3*(1+1e-3) { // φ is rounded to a whole batch
				t.Errorf("%s: doubling batch %d multiplies progress per step by %.3f, want ≤ 4/3", m, b, gain)
			}
		}
		t.Logf("%-12s φ=%-9.4g E(φ/2)=%.3f E(φ)=%.3f E(2φ)=%.3f E(4φ)=%.3f", m, ns.Phi,
			ns.Efficiency(phi/2), ns.Efficiency(phi), ns.Efficiency(2*phi), ns.Efficiency(4*phi))
	}
	// Measured, not only modelled: yolov3's largest run (batch 512, ≈ φ)
	// kept about half the efficiency of its smallest.
	fit, err := PolluxNoiseScale("yolov3")
	if err != nil {
		t.Fatal(err)
	}
	last := fit.Batches[len(fit.Batches)-1]
	if last.Batch != 512 || last.Observed > 0.55 || last.Observed < 0.45 {
		t.Errorf("yolov3 at batch %d: observed efficiency %.3f, want about 0.5", last.Batch, last.Observed)
	}
	for i := 1; i < len(fit.Batches); i++ {
		if fit.Batches[i].Observed >= fit.Batches[i-1].Observed {
			t.Errorf("yolov3: observed efficiency rises from batch %d to %d", fit.Batches[i-1].Batch, fit.Batches[i].Batch)
		}
	}
}

func TestPolluxNoiseScales(t *testing.T) {
	// The fitted φ of each model, within 1 % of the figures in the package
	// report, and every run's efficiency within 2.5 points.
	want := map[string]float64{"bert": 9066, "cifar10": 5948, "deepspeech2": 1034, "imagenet": 19700, "ncf": 1.532e6, "yolov3": 510.9}
	for m, phi := range want {
		fit, err := PolluxNoiseScale(m)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(fit.Phi-phi) > 0.01*phi {
			t.Errorf("%s: φ = %.4g, want %.4g", m, fit.Phi, phi)
		}
		if fit.MaxError > 0.025 {
			t.Errorf("%s: max efficiency error %.3f, want ≤ 0.025", m, fit.MaxError)
		}
		if !(fit.Gradient > 0) || fit.Gradient > fit.Phi {
			t.Errorf("%s: snapshot φ %.4g, want positive and below the fitted %.4g", m, fit.Gradient, fit.Phi)
		}
	}
	if _, err := PolluxNoiseScale("mnist"); err == nil || !strings.HasPrefix(err.Error(), "rst: pollux: ") {
		t.Errorf("unknown model: %v", err)
	}
}

func TestFitNoiseScaleRecoversAKnownScale(t *testing.T) {
	// Runs generated from a known φ must give it back.
	truth := NoiseScale{Phi: 3000, Base: 100}
	var runs []GradientRun
	for _, b := range []int{100, 400, 1600, 6400} {
		work := 1e4 // reference steps
		runs = append(runs, GradientRun{Batch: b, Points: []GradientPoint{
			{Progress: work / 2, Iteration: truth.Steps(work/2*100, b), GradSqr: 1, GradVar: 30},
			{Progress: work, Iteration: truth.Steps(work*100, b), GradSqr: 1, GradVar: 30},
		}})
	}
	fit, err := FitNoiseScale(100, runs)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(fit.Phi-3000) > 1e-6*3000 || fit.MaxError > 1e-9 {
		t.Errorf("fit %v, want φ = 3000 exactly", fit)
	}
	// GradVar/GradSqr = 30 at base 100: φ from the snapshots is 3000 too.
	if math.Abs(fit.Gradient-3000) > 1e-9 {
		t.Errorf("snapshot φ = %g, want 3000", fit.Gradient)
	}
	// No loss of efficiency at all: pure noise.
	flat := []GradientRun{
		{Batch: 10, Points: []GradientPoint{{Progress: 100, Iteration: 100}}},
		{Batch: 40, Points: []GradientPoint{{Progress: 100, Iteration: 25}}},
	}
	if fit, err := FitNoiseScale(10, flat); err != nil || !math.IsInf(fit.Phi, 1) {
		t.Errorf("flat runs: fit %v, %v; want φ = +Inf", fit, err)
	}
}

func TestFitNoiseScaleErrors(t *testing.T) {
	ok := GradientRun{Batch: 10, Points: []GradientPoint{{Progress: 10, Iteration: 10, GradSqr: 1, GradVar: 1}}}
	big := GradientRun{Batch: 20, Points: []GradientPoint{{Progress: 10, Iteration: 6, GradSqr: 1, GradVar: 1}}}
	tests := []struct {
		name    string
		base    int
		runs    []GradientRun
		wantErr string
	}{
		{"zero base", 0, []GradientRun{ok, big}, "base batch 0"},
		{"one run", 10, []GradientRun{ok}, "1 runs"},
		{"one batch size", 10, []GradientRun{ok, ok}, "every run has batch size 10"},
		{"below base", 20, []GradientRun{ok, big}, "runs[0].Batch 10 is below the base 20"},
		{"no points", 10, []GradientRun{ok, {Batch: 20}}, "runs[1] (batch 20) has no points"},
		{"NaN", 10, []GradientRun{ok, {Batch: 20, Points: []GradientPoint{{Progress: math.NaN(), Iteration: 1}}}}, "runs[1].Points[0].Progress is NaN"},
		{"negative variance", 10, []GradientRun{ok, {Batch: 20, Points: []GradientPoint{{Progress: 1, Iteration: 1, GradVar: -1}}}}, "runs[1].Points[0].GradVar"},
		{"progress decreases", 10, []GradientRun{ok, {Batch: 20, Points: []GradientPoint{{Progress: 2, Iteration: 1}, {Progress: 1, Iteration: 2}}}}, "runs[1].Points[1].Progress decreases"},
		{"no steps", 10, []GradientRun{ok, {Batch: 20, Points: []GradientPoint{{Progress: 1}}}}, "runs[1] (batch 20) ends with no steps"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FitNoiseScale(tc.base, tc.runs)
			if err == nil || !strings.HasPrefix(err.Error(), "rst: ") || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestSetEfficiency(t *testing.T) {
	fam := []elastico.Profile{
		{Class: elastico.Training, Config: elastico.Configuration{ID: "b64", BatchSize: 64}},
		{Class: elastico.Training, Config: elastico.Configuration{ID: "b256", BatchSize: 256}},
		{Class: elastico.Inference, Config: elastico.Configuration{ID: "kv40", BatchSize: 8}},
	}
	ns := NoiseScale{Phi: 128, Base: 64}
	if err := ns.SetEfficiency(fam); err != nil {
		t.Fatal(err)
	}
	got := []float64{fam[0].Efficiency, fam[1].Efficiency, fam[2].Efficiency}
	if diff := cmp.Diff([]float64{1, 0.5, 0}, got, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Errorf("efficiencies (-want +got):\n%s", diff)
	}
	low := NoiseScale{Phi: 128, Base: 128}
	if err := low.SetEfficiency(fam); err == nil || !strings.Contains(err.Error(), `"b64"`) {
		t.Errorf("batch below base: %v", err)
	}
	rebased, factor := low.Rebase(64)
	if rebased.Base != 64 || math.Abs(factor-4.0/3) > 1e-12 {
		t.Errorf("Rebase(64) = %v, %g", rebased, factor)
	}
	if err := (NoiseScale{Phi: math.NaN(), Base: 1}).SetEfficiency(fam); err == nil || !strings.Contains(err.Error(), "Phi") {
		t.Errorf("NaN φ: %v", err)
	}
}
