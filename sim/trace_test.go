package sim

import (
	"errors"
	"strings"
	"testing"

	"github.com/elastico/elastico"
	"github.com/google/go-cmp/cmp"
)

func TestReaders(t *testing.T) {
	gavel7 := "ResNet-50 (batch size 64)\tcd x && python3 main.py\t--num_minibatches\t1\t47442\t10.000000\t2\n" +
		"A3C\tcd y && python3 main.py\t--max-steps\t0\t1000\t0.000000\t1\n"
	gavel10 := "LM (batch size 20)\tpython3 main.py\t%s/lm\t--steps\t1\t500\t4\t1\t-1\t3.5\n"
	tests := []struct {
		name, format, in string
		want             []TraceJob
	}{
		{"gavel 7 fields, sorted by arrival", "gavel", gavel7, []TraceJob{
			{ID: "job00001", Line: 2, Arrival: 0, Family: "A3C", GPUs: 1, GPUShare: 1, Steps: 1000},
			{ID: "job00000", Line: 1, Arrival: 10, Family: "ResNet-50", Batch: 64, GPUs: 2, GPUShare: 1, Steps: 47442},
		}},
		{"gavel 10 fields", "gavel", gavel10, []TraceJob{
			{ID: "job00000", Line: 1, Arrival: 3.5, Family: "LM", Batch: 20, GPUs: 4, GPUShare: 1, Steps: 500},
		}},
		{"pollux workload", "pollux", "name,time,application,num_replicas,batch_size\ncifar10-0,107,cifar10,6,2048\nncf-2,135,ncf,1,32768\n", []TraceJob{
			{ID: "cifar10-0", Line: 2, Arrival: 107, Family: "cifar10", GlobalBatch: 2048, GPUs: 6, GPUShare: 1},
			{ID: "ncf-2", Line: 3, Arrival: 135, Family: "ncf", GlobalBatch: 32768, GPUs: 1, GPUShare: 1},
		}},
		{"philly, origin at the earliest submission", "philly", "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,11cb48\n2017-10-09 06:13:03,2951.0,8,23608.0,6214e9\n2017-10-09 06:13:04,0.0,1,0.0,6214e9\n", []TraceJob{
			{ID: "philly00001", Line: 3, Arrival: 0, GPUs: 8, GPUShare: 1, Duration: 2951},
			{ID: "philly00000", Line: 2, Arrival: 2932, GPUs: 1, GPUShare: 1, Duration: 66},
		}},
		{"openb: fractions, QoS, skipped pods", "openb", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n" +
			"p0,12000,16384,1,460,,LS,Running,100,1100,110\n" +
			"p1,6000,12288,0,0,,BE,Running,0,50,0\n" +
			"p2,6000,12288,2,1000,,BE,Pending,20,30,\n" +
			"p3,88000,327680,8,1000,,Burstable,Succeeded,5,905,5\n", []TraceJob{
			{ID: "p3", Line: 5, Arrival: 5, GPUs: 8, GPUShare: 1, Duration: 900, ClassKnown: true},
			{ID: "p0", Line: 2, Arrival: 100, GPUs: 1, GPUShare: 0.46, Duration: 990, Class: elastico.Inference, ClassKnown: true},
		}},
		{"generic csv", "csv", "id,arrival,gpus,duration,work,family,batch,class,kv,seqs\nx,5,2,3600,,ResNet-50,32,,,\ny,1,1,,1e6,OPT-1.3B-offline,,inference,0.2,32\n", []TraceJob{
			{ID: "y", Line: 3, Arrival: 1, GPUs: 1, GPUShare: 1, Work: 1e6, Family: "OPT-1.3B-offline", Class: elastico.Inference, ClassKnown: true, KVCacheFrac: 0.2, MaxSeqs: 32},
			{ID: "x", Line: 2, Arrival: 5, GPUs: 2, GPUShare: 1, Duration: 3600, Family: "ResNet-50", Batch: 32},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := ReadTrace(strings.NewReader(tc.in), tc.format, "f")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, tr.Jobs); diff != "" {
				t.Errorf("jobs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadersRejectBadInput(t *testing.T) {
	tests := []struct {
		name, format, in string
		wantLine         int
		wantField        string
	}{
		{"gavel field count", "gavel", "A3C\tcmd\t1\n", 1, ""},
		{"gavel bad type", "gavel", "A3C\tc\ta\t0\t10\t0\t1\nBad (batch size x)\tc\ta\t0\t10\t0\t1\n", 2, "job_type"},
		{"gavel zero steps", "gavel", "A3C\tc\ta\t0\t0\t0\t1\n", 1, "total_steps"},
		{"gavel negative arrival", "gavel", "A3C\tc\ta\t0\t5\t-1\t1\n", 1, "arrival_time"},
		{"gavel zero GPUs", "gavel", "A3C\tc\ta\t0\t5\t1\t0\n", 1, "scale_factor"},
		{"pollux missing column", "pollux", "name,time,application,num_replicas\nx,1,cifar10,1\n", 1, "batch_size"},
		{"pollux bad replicas", "pollux", "name,time,application,num_replicas,batch_size\nx,1,cifar10,two,128\n", 2, "num_replicas"},
		{"pollux duplicate", "pollux", "name,time,application,num_replicas,batch_size\nx,1,cifar10,1,128\nx,2,ncf,1,128\n", 3, "id"},
		{"philly timestamp", "philly", "timestamp,duration,num_gpus,gpu_time,cluster\nyesterday,5,1,5,x\n", 2, "timestamp"},
		{"philly NaN duration", "philly", "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,NaN,1,5,x\n", 2, "duration"},
		{"openb milli", "openb", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\np,1,1,1,1500,,BE,Running,0,10,0\n", 2, "gpu_milli"},
		{"openb scheduled before created", "openb", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\np,1,1,1,1000,,BE,Running,10,20,5\n", 2, "scheduled_time"},
		{"csv both duration and work", "csv", "arrival,gpus,duration,work\n0,1,5,5\n", 2, "duration"},
		{"csv neither", "csv", "arrival,gpus,duration,work\n0,1,,\n", 2, "duration"},
		{"csv no work column", "csv", "arrival,gpus\n0,1\n", 1, "duration"},
		{"csv bad class", "csv", "arrival,gpus,duration,class\n0,1,5,serving\n", 2, "class"},
		{"csv kv on training", "csv", "arrival,gpus,duration,kv\n0,1,5,0.2\n", 2, "kv"},
		{"csv short row", "csv", "arrival,gpus,duration\n0,1\n", 2, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadTrace(strings.NewReader(tc.in), tc.format, "bad.txt")
			var te *TraceError
			if !errors.As(err, &te) {
				t.Fatalf("err = %v, want a *TraceError", err)
			}
			if te.File != "bad.txt" || te.Line != tc.wantLine || te.Field != tc.wantField {
				t.Errorf("error at %s:%d field %q (%v), want line %d field %q", te.File, te.Line, te.Field, err, tc.wantLine, tc.wantField)
			}
		})
	}
	if _, err := ReadTrace(strings.NewReader(""), "gavel", "empty"); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty trace: %v", err)
	}
	if _, err := ReadTrace(strings.NewReader(""), "yaml", "x"); err == nil || !strings.Contains(err.Error(), "yaml") {
		t.Errorf("unknown format: %v", err)
	}
}

func TestShippedTraces(t *testing.T) {
	for _, st := range ShippedTraces {
		tr, err := ReadShipped(st.Path)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Jobs) == 0 {
			t.Errorf("%s: no jobs", st.Path)
		}
	}
	tr, _ := ReadShipped("gavel/0e4a51.trace")
	if got := len(tr.Jobs); got != 1181 {
		t.Errorf("0e4a51.trace: %d jobs, want 1181", got)
	}
}

func TestConcatTraces(t *testing.T) {
	a, _ := ReadPollux(strings.NewReader("name,time,application,num_replicas,batch_size\nx,10,cifar10,1,128\ny,30,ncf,1,256\n"), "a")
	b, _ := ReadPollux(strings.NewReader("name,time,application,num_replicas,batch_size\nx,5,bert,2,12\n"), "b")
	got, err := ConcatTraces("ab", a, b)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		ID      string
		Arrival float64
	}
	var rows []row
	for _, j := range got.Jobs {
		rows = append(rows, row{j.ID, j.Arrival})
	}
	// a spans 20 s with a mean gap of 20 s: b starts at 40 s.
	want := []row{{"1/x", 0}, {"1/y", 20}, {"2/x", 40}}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	g, _ := ReadGavel(strings.NewReader("A3C\tc\ta\t0\t5\t1\t1\n"), "g")
	if _, err := ConcatTraces("mixed", a, g); err == nil {
		t.Error("joined a pollux and a gavel trace")
	}
	all, err := ReadShipped(ShippedPolluxAll)
	if err != nil || len(all.Jobs) != 8*160 {
		t.Errorf("all Pollux workloads: %v jobs, %v", len(all.Jobs), err)
	}
}
