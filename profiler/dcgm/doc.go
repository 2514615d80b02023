// Package dcgm is a profiler.Source that reads NVIDIA DCGM through a
// dcgm-exporter /metrics endpoint. It is pure Go: go-dcgm is not served by
// the module proxy, and the exporter is what GPU nodes run anyway.
//
// Metrics are keyed by DCGM field ID ([FieldByName]), so the exporter's
// current names (DCGM_FI_PROF_SM_ACTIVE), its 1.x names (dcgm_sm_clock,
// dcgm_fi_prof_sm_active; --use-old-namespace) and label names in either
// case (UUID/uuid, Hostname/hostname) all work. MIG instances (GPU_I_ID,
// GPU_I_PROFILE) are devices of their own, and the Kubernetes labels (pod,
// namespace, container, or pod_name, pod_namespace, container_name) select a
// pod's device. DCGM's blank sentinels ([IsBlank]; an exporter prints, for
// instance, 9223372036854775794 for a temperature the board cannot read) are
// missing values, never numbers.
//
// # Running dcgm-exporter for profiling
//
// The exporter polls DCGM every 30 s by default and leaves the profiling
// fields (DCGM_FI_PROF_*) out of its default collectors file. For the
// profiler, make it collect every second (-c 1000, in milliseconds) with a
// collectors file that has the profiling fields, and give it CAP_SYS_ADMIN,
// which DCGM's profiling module needs:
//
//	docker run -d --gpus all --cap-add SYS_ADMIN -p 9400:9400 \
//	    nvcr.io/nvidia/k8s/dcgm-exporter:<version> \
//	    -c 1000 -f /etc/dcgm-exporter/dcp-metrics-included.csv
//
// (With the Helm chart: arguments ["-c", "1000", "-f", "/etc/dcgm-exporter/dcp-metrics-included.csv"];
// on a bare node: dcgm-exporter -c 1000 -f <file>, or DCGM_EXPORTER_INTERVAL=1000 and
// DCGM_EXPORTER_COLLECTORS=<file>.) A collectors file with exactly what the
// profiler reads, one "field, type, help" line each:
//
//	DCGM_FI_PROF_GR_ENGINE_ACTIVE,    gauge, graphics engine active (ratio)
//	DCGM_FI_PROF_SM_ACTIVE,           gauge, SM active (ratio)
//	DCGM_FI_PROF_SM_OCCUPANCY,        gauge, SM occupancy (ratio)
//	DCGM_FI_PROF_PIPE_TENSOR_ACTIVE,  gauge, tensor pipe active (ratio)
//	DCGM_FI_PROF_PIPE_FP32_ACTIVE,    gauge, FP32 pipe active (ratio)
//	DCGM_FI_PROF_PIPE_FP16_ACTIVE,    gauge, FP16 pipe active (ratio)
//	DCGM_FI_PROF_DRAM_ACTIVE,         gauge, DRAM active (ratio)
//	DCGM_FI_PROF_PCIE_TX_BYTES,       gauge, PCIe sent (B/s)
//	DCGM_FI_PROF_PCIE_RX_BYTES,       gauge, PCIe received (B/s)
//	DCGM_FI_PROF_NVLINK_TX_BYTES,     gauge, NVLink sent (B/s)
//	DCGM_FI_PROF_NVLINK_RX_BYTES,     gauge, NVLink received (B/s)
//	DCGM_FI_DEV_FB_TOTAL,             gauge, framebuffer total (MiB)
//	DCGM_FI_DEV_FB_USED,              gauge, framebuffer used (MiB)
//	DCGM_FI_DEV_FB_FREE,              gauge, framebuffer free (MiB)
//	DCGM_FI_DEV_POWER_USAGE,          gauge, power draw (W)
//	DCGM_FI_DEV_ENFORCED_POWER_LIMIT, gauge, enforced power limit (W)
//	DCGM_FI_DEV_PCIE_MAX_LINK_GEN,    gauge, PCIe generation
//	DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH,  gauge, PCIe lanes
//	DCGM_FI_DRIVER_VERSION,           label, driver version
//
// Some GPUs (consumer and older boards) have no profiling fields; the
// counters then fall back to DCGM_FI_DEV_GPU_UTIL and
// DCGM_FI_DEV_MEM_COPY_UTIL where they can, and are absent otherwise. Check
// the endpoint with curl -s localhost:9400/metrics | grep PROF before
// profiling. What the exporter never exports (an old exporter's model name,
// the NVLink bandwidth) goes in [Config].
package dcgm
