package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// BenchmarkTick is the adapter's own cost per tick (Slurm's commands and
// the scheduler excluded: a fake slurmctld and a plan that starts nobody),
// with 64 nodes of 8 GPUs and 2,000 queued opted-in jobs.
func BenchmarkTick(b *testing.B) {
	f := newFake(0, 0)
	f.nodes = nil
	for n := range 64 {
		var g []string
		for i := range 8 {
			g = append(g, fmt.Sprintf("gpu:gpu%d:1", i))
		}
		for i := range 8 {
			g = append(g, fmt.Sprintf("shard:gpu%d:4", i))
		}
		f.nodes = append(f.nodes, Node{Name: fmt.Sprintf("gn%02d", n), State: "idle", Gres: strings.Join(g, ","), CPUs: 128, RealMemory: 1 << 20})
	}
	for i := range 2000 {
		spec := trainSpec
		if i%2 == 1 {
			spec = inferSpec
		}
		f.submit(spec, true, "")
	}
	s := &scripted{plan: keep}
	a, err := New(Config{Slurm: f, Scheduler: s, StateDir: b.TempDir(), GPUMemory: 80,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: func() time.Time { return time.Unix(0, 0) }})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	// Waiting statuses are written once, StatusPerTick a tick.
	for n := -1; n != len(f.calls); {
		n = len(f.calls)
		a.Tick(context.Background())
	}
	b.ResetTimer()
	b.ReportAllocs()
	for range b.N {
		s.states = s.states[:0]
		if _, err := a.Tick(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeJobs reads squeue --json with 2,000 jobs.
func BenchmarkDecodeJobs(b *testing.B) {
	type job struct {
		ID      int    `json:"job_id"`
		State   string `json:"job_state"`
		Comment string `json:"comment"`
		Tres    string `json:"tres_per_node"`
		Submit  int64  `json:"submit_time"`
		Padding string `json:"standard_output"`
	}
	var doc struct {
		Errors []string `json:"errors"`
		Jobs   []job    `json:"jobs"`
	}
	doc.Errors = []string{}
	for i := range 2000 {
		doc.Jobs = append(doc.Jobs, job{ID: i + 1, State: "PENDING", Comment: trainSpec, Tres: "gres:shard:gpu1:2", Submit: int64(i), Padding: strings.Repeat("x", 400)})
	}
	raw, _ := json.Marshal(doc)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for range b.N {
		if _, err := DecodeJobs(bytes.NewReader(raw)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseSpec(b *testing.B) {
	text := strings.TrimPrefix(trainSpec, Prefix)
	b.ReportAllocs()
	for range b.N {
		if _, err := ParseSpec(text); err != nil {
			b.Fatal(err)
		}
	}
}
