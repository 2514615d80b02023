package pollux

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

func TestLoadEmbedded(t *testing.T) {
	// Row counts and batch sizes from SOURCES.md and the files themselves.
	tests := []struct {
		model          string
		wantBatches    []int
		wantPlacements int
		wantPoints     int // rows per validation file
	}{
		{"bert", []int{12, 24, 48, 96, 192, 384}, 540, 2},
		{"cifar10", []int{128, 256, 512, 1024, 2048, 4096}, 1183, 100},
		{"deepspeech2", []int{20, 40, 80, 160, 320, 640}, 754, 80},
		{"imagenet", []int{200, 400, 800, 1600, 3200, 6400, 12800}, 864, 90},
		{"ncf", []int{256, 512, 1024, 2048, 4096, 8192, 16384, 32768}, 1661, 10},
		{"yolov3", []int{8, 16, 32, 64, 128, 256, 512}, 540, 50},
	}
	distinct := map[string]bool{}
	for _, tc := range tests {
		t.Run(tc.model, func(t *testing.T) {
			app, err := Load(tc.model)
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, r := range app.Runs {
				got = append(got, r.Batch)
				if len(r.Points) != tc.wantPoints {
					t.Errorf("batch %d: %d points, want %d", r.Batch, len(r.Points), tc.wantPoints)
				}
			}
			if diff := cmp.Diff(tc.wantBatches, got); diff != "" {
				t.Errorf("batch sizes (-want +got):\n%s", diff)
			}
			if len(app.Placements) != tc.wantPlacements {
				t.Errorf("%d placements, want %d", len(app.Placements), tc.wantPlacements)
			}
			for _, p := range app.Placements {
				distinct[p.Placement] = true
				if p.Replicas < p.Nodes || p.Replicas > 4*p.Nodes {
					t.Errorf("placement %q: %d replicas on %d nodes of 4 GPUs", p.Placement, p.Replicas, p.Nodes)
				}
			}
			// The smallest batch's progress counts its own steps: it is the
			// unit of progress.
			first := app.Runs[0].Points[len(app.Runs[0].Points)-1]
			if d := first.Progress - first.Iteration; d < -1.5 || d > 1.5 {
				t.Errorf("smallest batch: progress %g after %g steps, want equal", first.Progress, first.Iteration)
			}
		})
	}
	if len(distinct) != 108 {
		t.Errorf("%d distinct placements, want 108 (SOURCES.md)", len(distinct))
	}
	if got := Models(); len(got) != len(tests) {
		t.Errorf("Models() = %v", got)
	}
}

func TestPlacementSamples(t *testing.T) {
	p := Placement{Placement: "22", Nodes: 2, Replicas: 4, LocalBatch: 32, StepTime: 0.5}
	if got := p.Samples(); got != 256 {
		t.Errorf("Samples = %g, want 256", got)
	}
}

func TestParseErrors(t *testing.T) {
	good := "progress,iteration,metric,grad_sqr,grad_var\n1,1,0.5,2,3\n"
	goodPl := "placement,local_bsz,step_time,sync_time\n12,32,0.1,0.01\n"
	tests := []struct {
		name    string
		files   map[string]string
		wantErr string
	}{
		{"no validation file", map[string]string{"m/placements.csv": goodPl}, `model "m": no validation-<batch>.csv file`},
		{"bad batch in file name", map[string]string{"m/validation-x.csv": good, "m/placements.csv": goodPl}, "m/validation-x.csv: the file name"},
		{"wrong header", map[string]string{"m/validation-8.csv": "progress,iteration,metric\n1,1,1\n", "m/placements.csv": goodPl}, "m/validation-8.csv"},
		{"not a number", map[string]string{"m/validation-8.csv": good + "2,x,0.5,2,3\n", "m/placements.csv": goodPl}, "m/validation-8.csv:3: iteration"},
		{"negative variance", map[string]string{"m/validation-8.csv": good + "2,2,0.5,2,-3\n", "m/placements.csv": goodPl}, "m/validation-8.csv:3: grad_var"},
		{"NaN", map[string]string{"m/validation-8.csv": good + "NaN,2,0.5,2,3\n", "m/placements.csv": goodPl}, "m/validation-8.csv:3: progress"},
		{"progress goes back", map[string]string{"m/validation-8.csv": good + "0.5,2,0.5,2,3\n", "m/placements.csv": goodPl}, "m/validation-8.csv:3: progress and iteration"},
		{"empty validation", map[string]string{"m/validation-8.csv": "", "m/placements.csv": goodPl}, "m/validation-8.csv: empty file"},
		{"header only", map[string]string{"m/validation-8.csv": "progress,iteration,metric,grad_sqr,grad_var\n", "m/placements.csv": goodPl}, "m/validation-8.csv: no rows"},
		{"no placements", map[string]string{"m/validation-8.csv": good}, "placements.csv"},
		{"zero digit placement", map[string]string{"m/validation-8.csv": good, "m/placements.csv": goodPl + "102,32,0.1,0.01\n"}, "m/placements.csv:3: placement \"102\""},
		{"bad local batch", map[string]string{"m/validation-8.csv": good, "m/placements.csv": goodPl + "1,0,0.1,0.01\n"}, "m/placements.csv:3: local_bsz"},
		{"zero step time", map[string]string{"m/validation-8.csv": good, "m/placements.csv": goodPl + "1,8,0,0\n"}, "m/placements.csv:3: step_time"},
		{"sync above step", map[string]string{"m/validation-8.csv": good, "m/placements.csv": goodPl + "1,8,0.1,0.2\n"}, "m/placements.csv:3: sync_time"},
		{"short row", map[string]string{"m/validation-8.csv": good, "m/placements.csv": goodPl + "1,8,0.1\n"}, "m/placements.csv"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for n, s := range tc.files {
				fsys[n] = &fstest.MapFile{Data: []byte(s)}
			}
			_, err := LoadFS(fsys, "m")
			if err == nil {
				t.Fatal("LoadFS accepted bad input")
			}
			if !strings.HasPrefix(err.Error(), "pollux: ") || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
	if _, err := LoadFS(fstest.MapFS{}, "../x"); err == nil {
		t.Error("a path as model name accepted")
	}
	if _, err := ParseValidation(strings.NewReader(good), "v", 0); err == nil {
		t.Error("batch 0 accepted")
	}
}

func BenchmarkLoad(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load("ncf"); err != nil {
			b.Fatal(err)
		}
	}
}
