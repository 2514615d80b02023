package sim

import (
	"embed"
	"fmt"
	"io/fs"
)

// shipped holds the traces the project may redistribute, each folder with
// its LICENSE: one of Gavel's Philly-derived traces (MIT) and Pollux's eight
// evaluation workloads (Apache-2.0). Nothing from the Alibaba traces (no
// license stated) is shipped: ReadOpenB reads the user's copy.
//
//go:embed data
var shipped embed.FS

// ShippedTrace is a trace embedded in the package.
type ShippedTrace struct {
	Path   string // inside Data, e.g. "gavel/0e4a51.trace"
	Format string
}

// ShippedTraces lists the embedded traces.
var ShippedTraces = []ShippedTrace{
	{"gavel/0e4a51.trace", "gavel"},
	{"pollux/workload-1.csv", "pollux"},
	{"pollux/workload-2.csv", "pollux"},
	{"pollux/workload-3.csv", "pollux"},
	{"pollux/workload-4.csv", "pollux"},
	{"pollux/workload-5.csv", "pollux"},
	{"pollux/workload-6.csv", "pollux"},
	{"pollux/workload-7.csv", "pollux"},
	{"pollux/workload-8.csv", "pollux"},
}

// Data returns the embedded data folder (traces and their licenses).
func Data() fs.FS {
	sub, err := fs.Sub(shipped, "data")
	if err != nil {
		panic(err) // the embedded folder always exists
	}
	return sub
}

// ShippedPolluxAll names the eight Pollux workloads joined end to end
// (ConcatTraces), for ReadShipped.
const ShippedPolluxAll = "pollux/all"

// ReadShipped reads an embedded trace by its path in Data, or
// ShippedPolluxAll.
func ReadShipped(path string) (*Trace, error) {
	if path == ShippedPolluxAll {
		var trs []*Trace
		for _, t := range ShippedTraces {
			if t.Format == "pollux" {
				tr, err := ReadShipped(t.Path)
				if err != nil {
					return nil, err
				}
				trs = append(trs, tr)
			}
		}
		return ConcatTraces(ShippedPolluxAll, trs...)
	}
	for _, t := range ShippedTraces {
		if t.Path == path {
			f, err := Data().Open(path)
			if err != nil {
				return nil, fmt.Errorf("sim: %w", err)
			}
			defer f.Close()
			return ReadTrace(f, t.Format, path)
		}
	}
	return nil, fmt.Errorf("sim: no shipped trace %q", path)
}
