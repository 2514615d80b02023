package dcgm

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Device is one GPU, or one MIG instance of a GPU, as a scrape shows it.
type Device struct {
	GPU      string // the exporter's GPU index ("gpu" label)
	UUID     string // "UUID" (or "uuid" with --use-old-namespace)
	Instance string // MIG GPU instance ID ("GPU_I_ID"); empty for a whole GPU
	Profile  string // MIG profile ("GPU_I_PROFILE"), e.g. "1g.5gb"
	Model    string // "modelName" label, or DCGM_FI_DEV_NAME exported as a label
	Driver   string // DCGM_FI_DRIVER_VERSION exported as a label
	Hostname string // "Hostname" (or "hostname")
	PCIBusID string
	// Pods are the Kubernetes pods the exporter attributed the device to
	// (--kubernetes); one device can appear once per pod.
	Pods []Pod
	// Fields holds each field's value; a field whose value was one of
	// DCGM's blank sentinels is absent here and listed in Blank.
	Fields map[FieldID]float64
	Blank  []FieldID
}

// Pod is a Kubernetes pod the exporter attached to a device's metrics,
// under the new (pod, namespace, container) or old (pod_name,
// pod_namespace, container_name) label names.
type Pod struct {
	Namespace, Name, Container string
}

// Key names the device: its UUID (or GPU index) and MIG instance.
func (d *Device) Key() string {
	id := d.UUID
	if id == "" {
		id = "gpu " + d.GPU
	}
	if d.Instance != "" {
		return id + " MIG instance " + d.Instance
	}
	return id
}

// Scrape is one parsed /metrics page.
type Scrape struct {
	// Devices in the order their first metric appeared.
	Devices []*Device
}

// labelField returns where a label goes, or nil for a label that does not
// identify the device. The exporter has written several names in both cases
// over its versions (UUID/uuid, Hostname/hostname), and 1.x wrote the
// Kubernetes ones differently (pod_name, pod_namespace, container_name).
func labelField(d *Device, p *Pod, name string) *string {
	for _, l := range []struct {
		name string
		dst  *string
	}{
		{"gpu", &d.GPU}, {"UUID", &d.UUID}, {"GPU_I_ID", &d.Instance}, {"GPU_I_PROFILE", &d.Profile},
		{"modelName", &d.Model}, {"DCGM_FI_DEV_NAME", &d.Model}, {"DCGM_FI_DRIVER_VERSION", &d.Driver},
		{"Hostname", &d.Hostname}, {"pci_bus_id", &d.PCIBusID},
		{"pod", &p.Name}, {"pod_name", &p.Name}, {"namespace", &p.Namespace}, {"pod_namespace", &p.Namespace},
		{"container", &p.Container}, {"container_name", &p.Container},
	} {
		if strings.EqualFold(name, l.name) {
			return l.dst
		}
	}
	return nil
}

// Parse reads a dcgm-exporter /metrics page (Prometheus text format). name
// (a URL or a file) prefixes its errors. Metrics that are not DCGM fields
// are ignored, and so are series of other entities (NVSwitches, NVLinks,
// CPUs), which carry no gpu or UUID label.
func Parse(r io.Reader, name string) (*Scrape, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		var pe expfmt.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("dcgm: %s: line %d: %s", name, pe.Line, pe.Msg)
		}
		return nil, fmt.Errorf("dcgm: %s: %w", name, err)
	}
	s := &Scrape{}
	type devKey struct{ id, instance string }
	byKey := make(map[devKey]*Device)
	var pod Pod
	// The parser returns a map: walk it by name, for a stable device order.
	for _, fname := range slices.Sorted(maps.Keys(fams)) {
		fam := fams[fname]
		id, ok := FieldByName(fname)
		if !ok {
			continue
		}
		for _, m := range fam.GetMetric() {
			v, ok := value(fam.GetType(), m)
			if !ok {
				continue
			}
			var lab Device
			pod = Pod{}
			for _, lp := range m.GetLabel() {
				if dst := labelField(&lab, &pod, lp.GetName()); dst != nil && *dst == "" {
					*dst = lp.GetValue()
				}
			}
			if lab.GPU == "" && lab.UUID == "" {
				continue
			}
			k := devKey{lab.UUID, lab.Instance}
			if k.id == "" {
				k.id = "gpu " + lab.GPU
			}
			d, ok := byKey[k]
			if ok {
				d.merge(&lab)
			} else {
				d = &lab
				d.Fields = make(map[FieldID]float64)
				byKey[k] = d
				s.Devices = append(s.Devices, d)
			}
			if pod != (Pod{}) && !slices.Contains(d.Pods, pod) {
				d.Pods = append(d.Pods, pod)
			}
			if _, seen := d.Fields[id]; seen || slices.Contains(d.Blank, id) {
				continue // the same reading repeated for another pod
			}
			if IsBlank(v) {
				d.Blank = append(d.Blank, id)
				continue
			}
			d.Fields[id] = v
		}
	}
	return s, nil
}

// merge fills d's empty identity labels from o (the labels vary between
// metrics only when one of them lacks some).
func (d *Device) merge(o *Device) {
	for _, f := range []struct{ dst, src *string }{
		{&d.GPU, &o.GPU}, {&d.UUID, &o.UUID}, {&d.Profile, &o.Profile}, {&d.Model, &o.Model},
		{&d.Driver, &o.Driver}, {&d.Hostname, &o.Hostname}, {&d.PCIBusID, &o.PCIBusID},
	} {
		if *f.dst == "" {
			*f.dst = *f.src
		}
	}
}

func value(t dto.MetricType, m *dto.Metric) (float64, bool) {
	switch t {
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue(), m.Gauge != nil
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue(), m.Counter != nil
	case dto.MetricType_UNTYPED:
		return m.GetUntyped().GetValue(), m.Untyped != nil
	}
	return 0, false
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
