//go:build cgo

package main

import (
	"github.com/elastico/elastico/profiler"
	"github.com/elastico/elastico/profiler/nvml"
)

func openNVML(devices []string, nvlinkBandwidth float64) (profiler.Source, func() error, error) {
	s, err := nvml.Open(nvml.Config{Devices: devices, NVLinkBandwidth: nvlinkBandwidth})
	if err != nil {
		return nil, nil, err
	}
	return s, s.Close, nil
}
