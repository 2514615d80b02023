package pds

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/elastico/elastico"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata/*.scenario")

// A scenario file is a description, then sections, each opened by a line
// "-- name --":
//
//	config     a Config as JSON (the component fields left out)
//	predictor  a tablePredictor as JSON ("victim|aggressor": slowdown)
//	state      the first epoch's State as JSON
//	want       the rendered Plan of the epoch before it (rewritten by -update)
//	next       a change to apply after the host applied the last plan:
//	           {"remove": [job IDs], "add": [jobs]}; another epoch runs
//
// so one file holds the cluster, the jobs and the expected plans of one
// story, epoch after epoch.
type section struct{ name, body string }

func parseScenario(data string) (head string, secs []section, err error) {
	lines := strings.SplitAfter(data, "\n")
	cur := -1
	var b strings.Builder
	flush := func() {
		if cur < 0 {
			head = b.String()
		} else {
			secs[cur].body = b.String()
		}
		b.Reset()
	}
	for n, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "-- ") && strings.HasSuffix(t, " --") && len(t) > 6 {
			flush()
			secs = append(secs, section{name: strings.TrimSpace(t[3 : len(t)-3])})
			cur = len(secs) - 1
			continue
		}
		if cur < 0 && t != "" && !strings.HasPrefix(t, "#") {
			return "", nil, fmt.Errorf("line %d: text before the first section must be # comments", n+1)
		}
		b.WriteString(l)
	}
	flush()
	return head, secs, nil
}

func decodeStrict(body string, v any) error {
	d := json.NewDecoder(strings.NewReader(body))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// render writes a Plan the way a person reviews it; durations are left
// out (they are the only part that varies between runs).
func render(st *elastico.State, p *elastico.Plan) string {
	var b strings.Builder
	b.WriteString("decisions:\n")
	for _, d := range p.Decisions {
		if d.Assignment != nil {
			fmt.Fprintf(&b, "  %s: %s on %s, slowdown %.3g", d.JobID, d.Assignment.ConfigID, strings.Join(d.Assignment.GPUs, ","), d.Slowdown)
			if len(d.Status.Reasons) > 0 {
				fmt.Fprintf(&b, " (%s)", strings.Join(d.Status.Reasons, "; "))
			}
			b.WriteString("\n")
			continue
		}
		fmt.Fprintf(&b, "  %s: waits, %s\n", d.JobID, d.Status)
	}
	b.WriteString("actions:\n")
	for _, a := range p.Actions {
		fmt.Fprintf(&b, "  %s\n", a)
		if a.Kind != elastico.Preempt {
			fmt.Fprintf(&b, "    %s\n", strings.Join(a.Launch.Env(), " "))
		}
	}
	s := p.Stats
	fmt.Fprintf(&b, "stats: rounds %d, violations %d, truncated %v\n", s.Rounds, s.Violations, s.Truncated)
	// The prices' values are the PriceSolver's (esp tests them); a golden
	// plan records which resources are scarce, not by how much.
	var priced []string
	for r, v := range p.Carry.Prices {
		if v > 0 {
			priced = append(priced, elastico.Resource(r).String())
		}
	}
	if priced == nil {
		priced = []string{"none"}
	}
	fmt.Fprintf(&b, "carry: priced %s\n", strings.Join(priced, ", "))
	jobs := make([]string, 0, len(p.Carry.Penalties))
	for j := range p.Carry.Penalties {
		jobs = append(jobs, j)
	}
	sort.Strings(jobs)
	for _, j := range jobs {
		cs := make([]string, 0)
		for c, v := range p.Carry.Penalties[j] {
			cs = append(cs, fmt.Sprintf("%s %.4g", c, v))
		}
		sort.Strings(cs)
		fmt.Fprintf(&b, "  penalty %s: %s\n", j, strings.Join(cs, ", "))
	}
	return b.String()
}

type change struct {
	Remove []string
	Add    []elastico.Job
	// Advance moves Now on (a time.ParseDuration string; zero: Now stays).
	Advance string
}

func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/*.scenario")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".scenario"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			head, secs, err := parseScenario(string(data))
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			cfg := Config{Clock: fixedClock()}
			pred := tablePredictor{}
			var st *elastico.State
			var plan *elastico.Plan
			epoch := 0
			changed := false
			for i := range secs {
				sec := &secs[i]
				switch sec.name {
				case "config":
					if err := decodeStrict(sec.body, &cfg); err != nil {
						t.Fatalf("%s: config: %v", file, err)
					}
				case "predictor":
					if err := decodeStrict(sec.body, &pred); err != nil {
						t.Fatalf("%s: predictor: %v", file, err)
					}
				case "state":
					st = &elastico.State{}
					if err := decodeStrict(sec.body, st); err != nil {
						t.Fatalf("%s: state: %v", file, err)
					}
				case "next":
					if plan == nil {
						t.Fatalf("%s: next before any want", file)
					}
					var c change
					if err := decodeStrict(sec.body, &c); err != nil {
						t.Fatalf("%s: next: %v", file, err)
					}
					st = apply(st, plan)
					if c.Advance != "" {
						d, err := time.ParseDuration(c.Advance)
						if err != nil {
							t.Fatalf("%s: next: Advance: %v", file, err)
						}
						st.Now = st.Now.Add(d)
					}
					st.Jobs = slices.DeleteFunc(st.Jobs, func(j elastico.Job) bool { return slices.Contains(c.Remove, j.ID) })
					st.Jobs = append(st.Jobs, c.Add...)
				case "want":
					if st == nil {
						t.Fatalf("%s: want before state", file)
					}
					epoch++
					cfg.Predictor = pred
					s, err := New(cfg)
					if err != nil {
						t.Fatalf("%s: %v", file, err)
					}
					plan, err = s.Epoch(context.Background(), st)
					if err != nil {
						t.Fatalf("%s: epoch %d: %v", file, epoch, err)
					}
					checkPlan(t, st, plan, pred, s.Config().Sharing.Keep()) // the loosest the rule allows
					got := render(st, plan)
					if *update {
						if sec.body != got {
							sec.body, changed = got, true
						}
						continue
					}
					if got != sec.body {
						t.Errorf("%s: epoch %d: plan differs from the golden one (go test -run TestScenarios -update rewrites it)\n--- want\n%s--- got\n%s", file, epoch, sec.body, got)
					}
				default:
					t.Fatalf("%s: unknown section %q", file, sec.name)
				}
			}
			if epoch == 0 {
				t.Fatalf("%s: no want section", file)
			}
			if *update && changed {
				var b bytes.Buffer
				b.WriteString(head)
				for _, sec := range secs {
					fmt.Fprintf(&b, "-- %s --\n%s", sec.name, sec.body)
				}
				tmp := file + ".tmp"
				if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(tmp, file); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
