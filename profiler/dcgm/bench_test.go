package dcgm

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// dgxPage is a /metrics page of an 8-GPU node from a current exporter: every
// field this package knows, with the full label set and HELP/TYPE lines.
func dgxPage() string {
	var b strings.Builder
	fields := make([]string, 0, len(names))
	for n := range names {
		fields = append(fields, n)
	}
	slices.Sort(fields)
	for _, n := range fields {
		fmt.Fprintf(&b, "# HELP %s help text.\n# TYPE %s gauge\n", n, n)
		for g := 0; g < 8; g++ {
			fmt.Fprintf(&b, `%s{gpu="%d",UUID="GPU-0000000%d-d595-d1c7-d1d2-179bcfa61660",pci_bus_id="00000000:%02X:00.0",device="nvidia%d",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-17",DCGM_FI_DRIVER_VERSION="550.54.15"} %g`+"\n",
				n, g, g, 0x18+g, g, 0.25+float64(g)/100)
		}
	}
	return b.String()
}

// BenchmarkParse parses one scrape of an 8-GPU node.
func BenchmarkParse(b *testing.B) {
	page := dgxPage()
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		sc, err := Parse(strings.NewReader(page), "bench")
		if err != nil || len(sc.Devices) != 8 {
			b.Fatal(len(sc.Devices), err)
		}
	}
}

// BenchmarkReading turns one device's fields into counters.
func BenchmarkReading(b *testing.B) {
	sc, err := Parse(strings.NewReader(dgxPage()), "bench")
	if err != nil {
		b.Fatal(err)
	}
	s := &Source{cfg: Config{NVLinkBandwidth: 450e9}}
	d := sc.Devices[3]
	b.ReportAllocs()
	for b.Loop() {
		s.Reading(d)
	}
}
