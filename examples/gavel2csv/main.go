// Command gavel2csv writes Gavel's co-location measurements (OSDI'20,
// github.com/stanford-futuredata/gavel, MIT; embedded in internal/gavel with
// its notice) as the profiles.csv and pairs.csv that iac.ReadDataset and
// examples/iaceval read:
//
//	go run ./examples/gavel2csv -gpu V100 -out /tmp/gavel-v100
//	go run ./examples/iaceval -profiles /tmp/gavel-v100/profiles.csv -pairs /tmp/gavel-v100/pairs.csv
//
// What each column holds for Gavel (no hardware counters: those columns are
// empty, i.e. missing) is documented in package iac/gaveldata.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/elastico/elastico/iac/gaveldata"
	"github.com/elastico/elastico/internal/atomicfile"
)

func main() {
	gpu := flag.String("gpu", "V100", "GPU model (V100, P100 or K80; any case), or several separated by commas")
	out := flag.String("out", ".", "directory to write profiles.csv and pairs.csv into")
	flag.Parse()
	if err := run(*gpu, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gavel2csv:", err)
		os.Exit(1)
	}
}

func run(gpu, dir string) error {
	d, err := gaveldata.Load(strings.Split(gpu, ",")...)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var prof, pairs bytes.Buffer
	fmt.Fprintf(&prof, "# Gavel (github.com/stanford-futuredata/gavel, MIT) %s: isolated throughput in samples/s (steps/s × batch); no hardware counters\n", gpu)
	if err := d.WriteProfiles(&prof); err != nil {
		return err
	}
	fmt.Fprintf(&pairs, "# Gavel (github.com/stanford-futuredata/gavel, MIT) %s: speed = co-located / isolated throughput\n", gpu)
	if err := d.WritePairs(&pairs); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{"profiles.csv", prof.Bytes()}, {"pairs.csv", pairs.Bytes()}} {
		if err := atomicfile.Write(filepath.Join(dir, f.name), f.data, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("%s: %d profiles, %d pairs (%d directions with speed ≥ 1) → %s\n", d.Name, len(d.Profiles), len(d.Pairs), d.Capped(), dir)
	mape, n := gaveldata.NeighbourMAPE(d)
	fmt.Printf("smoothness: predicting each of %d directions by its batch-size neighbours misses by %.1f %% (MAPE)\n", n, mape)
	return nil
}
