package dcgm

import (
	"math"
	"strings"
)

// FieldID is a DCGM field identifier (dcgm_fields.h). Metrics are keyed by
// it, whatever name the exporter gave them.
type FieldID uint16

// The fields the profiler reads, and the exporter's usual ones.
const (
	DevSMClock               FieldID = 100
	DevMemClock              FieldID = 101
	DevMemoryTemp            FieldID = 140
	DevGPUTemp               FieldID = 150
	DevPowerUsage            FieldID = 155 // W
	DevTotalEnergy           FieldID = 156 // mJ since the driver loaded
	DevPowerMgmtLimit        FieldID = 160 // W
	DevEnforcedPowerLimit    FieldID = 164 // W
	DevPCIeTxThroughput      FieldID = 200 // deprecated: use ProfPCIeTxBytes
	DevPCIeRxThroughput      FieldID = 201
	DevPCIeReplayCounter     FieldID = 202
	DevGPUUtil               FieldID = 203 // percent
	DevMemCopyUtil           FieldID = 204 // percent
	DevEncUtil               FieldID = 206
	DevDecUtil               FieldID = 207
	DevXIDErrors             FieldID = 230
	DevPCIeMaxLinkGen        FieldID = 235
	DevPCIeMaxLinkWidth      FieldID = 236
	DevPCIeLinkGen           FieldID = 237
	DevPCIeLinkWidth         FieldID = 238
	DevFBTotal               FieldID = 250 // MiB
	DevFBFree                FieldID = 251 // MiB
	DevFBUsed                FieldID = 252 // MiB
	DevFBReserved            FieldID = 253 // MiB
	DevNVLinkBandwidthTotal  FieldID = 449
	DevVGPULicenseStatus     FieldID = 526
	ProfGrEngineActive       FieldID = 1001 // ratio
	ProfSMActive             FieldID = 1002
	ProfSMOccupancy          FieldID = 1003
	ProfPipeTensorActive     FieldID = 1004
	ProfDRAMActive           FieldID = 1005
	ProfPipeFP64Active       FieldID = 1006
	ProfPipeFP32Active       FieldID = 1007
	ProfPipeFP16Active       FieldID = 1008
	ProfPCIeTxBytes          FieldID = 1009 // bytes/s
	ProfPCIeRxBytes          FieldID = 1010
	ProfNVLinkTxBytes        FieldID = 1011 // bytes/s
	ProfNVLinkRxBytes        FieldID = 1012
	devECCSBEVolatileTotal   FieldID = 310
	devECCDBEVolatileTotal   FieldID = 311
	devECCSBEAggregateTotal  FieldID = 312
	devECCDBEAggregateTotal  FieldID = 313
	devRetiredSBE            FieldID = 390
	devRetiredDBE            FieldID = 391
	devRetiredPending        FieldID = 392
	devNVLinkFlitCRCTotal    FieldID = 409
	devNVLinkDataCRCTotal    FieldID = 419
	devNVLinkReplayTotal     FieldID = 429
	devNVLinkRecoveryTotal   FieldID = 439
	devPowerViolation        FieldID = 240
	devThermalViolation      FieldID = 241
	devSyncBoostViolation    FieldID = 242
	devBoardLimitViolation   FieldID = 243
	devLowUtilViolation      FieldID = 244
	devReliabilityViolation  FieldID = 245
	devTotalAppClocksViolat  FieldID = 246
	devTotalBaseClocksViolat FieldID = 247
)

// names maps the exporter's metric names (DCGM_FI_ + the field's name in
// dcgm_fields.h) to field IDs.
var names = map[string]FieldID{
	"DCGM_FI_DEV_SM_CLOCK":                          DevSMClock,
	"DCGM_FI_DEV_MEM_CLOCK":                         DevMemClock,
	"DCGM_FI_DEV_MEMORY_TEMP":                       DevMemoryTemp,
	"DCGM_FI_DEV_GPU_TEMP":                          DevGPUTemp,
	"DCGM_FI_DEV_POWER_USAGE":                       DevPowerUsage,
	"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION":          DevTotalEnergy,
	"DCGM_FI_DEV_POWER_MGMT_LIMIT":                  DevPowerMgmtLimit,
	"DCGM_FI_DEV_ENFORCED_POWER_LIMIT":              DevEnforcedPowerLimit,
	"DCGM_FI_DEV_PCIE_TX_THROUGHPUT":                DevPCIeTxThroughput,
	"DCGM_FI_DEV_PCIE_RX_THROUGHPUT":                DevPCIeRxThroughput,
	"DCGM_FI_DEV_PCIE_REPLAY_COUNTER":               DevPCIeReplayCounter,
	"DCGM_FI_DEV_GPU_UTIL":                          DevGPUUtil,
	"DCGM_FI_DEV_MEM_COPY_UTIL":                     DevMemCopyUtil,
	"DCGM_FI_DEV_ENC_UTIL":                          DevEncUtil,
	"DCGM_FI_DEV_DEC_UTIL":                          DevDecUtil,
	"DCGM_FI_DEV_XID_ERRORS":                        DevXIDErrors,
	"DCGM_FI_DEV_PCIE_MAX_LINK_GEN":                 DevPCIeMaxLinkGen,
	"DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH":               DevPCIeMaxLinkWidth,
	"DCGM_FI_DEV_PCIE_LINK_GEN":                     DevPCIeLinkGen,
	"DCGM_FI_DEV_PCIE_LINK_WIDTH":                   DevPCIeLinkWidth,
	"DCGM_FI_DEV_FB_TOTAL":                          DevFBTotal,
	"DCGM_FI_DEV_FB_FREE":                           DevFBFree,
	"DCGM_FI_DEV_FB_USED":                           DevFBUsed,
	"DCGM_FI_DEV_FB_RESERVED":                       DevFBReserved,
	"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL":            DevNVLinkBandwidthTotal,
	"DCGM_FI_DEV_VGPU_LICENSE_STATUS":               DevVGPULicenseStatus,
	"DCGM_FI_PROF_GR_ENGINE_ACTIVE":                 ProfGrEngineActive,
	"DCGM_FI_PROF_SM_ACTIVE":                        ProfSMActive,
	"DCGM_FI_PROF_SM_OCCUPANCY":                     ProfSMOccupancy,
	"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE":               ProfPipeTensorActive,
	"DCGM_FI_PROF_DRAM_ACTIVE":                      ProfDRAMActive,
	"DCGM_FI_PROF_PIPE_FP64_ACTIVE":                 ProfPipeFP64Active,
	"DCGM_FI_PROF_PIPE_FP32_ACTIVE":                 ProfPipeFP32Active,
	"DCGM_FI_PROF_PIPE_FP16_ACTIVE":                 ProfPipeFP16Active,
	"DCGM_FI_PROF_PCIE_TX_BYTES":                    ProfPCIeTxBytes,
	"DCGM_FI_PROF_PCIE_RX_BYTES":                    ProfPCIeRxBytes,
	"DCGM_FI_PROF_NVLINK_TX_BYTES":                  ProfNVLinkTxBytes,
	"DCGM_FI_PROF_NVLINK_RX_BYTES":                  ProfNVLinkRxBytes,
	"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL":                 devECCSBEVolatileTotal,
	"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL":                 devECCDBEVolatileTotal,
	"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL":                 devECCSBEAggregateTotal,
	"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL":                 devECCDBEAggregateTotal,
	"DCGM_FI_DEV_RETIRED_SBE":                       devRetiredSBE,
	"DCGM_FI_DEV_RETIRED_DBE":                       devRetiredDBE,
	"DCGM_FI_DEV_RETIRED_PENDING":                   devRetiredPending,
	"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": devNVLinkFlitCRCTotal,
	"DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL": devNVLinkDataCRCTotal,
	"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL":   devNVLinkReplayTotal,
	"DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL": devNVLinkRecoveryTotal,
	"DCGM_FI_DEV_POWER_VIOLATION":                   devPowerViolation,
	"DCGM_FI_DEV_THERMAL_VIOLATION":                 devThermalViolation,
	"DCGM_FI_DEV_SYNC_BOOST_VIOLATION":              devSyncBoostViolation,
	"DCGM_FI_DEV_BOARD_LIMIT_VIOLATION":             devBoardLimitViolation,
	"DCGM_FI_DEV_LOW_UTIL_VIOLATION":                devLowUtilViolation,
	"DCGM_FI_DEV_RELIABILITY_VIOLATION":             devReliabilityViolation,
	"DCGM_FI_DEV_TOTAL_APP_CLOCKS_VIOLATION":        devTotalAppClocksViolat,
	"DCGM_FI_DEV_TOTAL_BASE_CLOCKS_VIOLATION":       devTotalBaseClocksViolat,
}

// legacyNames are the metric names of dcgm-exporter 1.x, which
// --use-old-namespace still produces (go-dcgm's legacy field table).
var legacyNames = map[string]FieldID{
	"dcgm_sm_clock":                          DevSMClock,
	"dcgm_memory_clock":                      DevMemClock,
	"dcgm_memory_temp":                       DevMemoryTemp,
	"dcgm_gpu_temp":                          DevGPUTemp,
	"dcgm_power_usage":                       DevPowerUsage,
	"dcgm_total_energy_consumption":          DevTotalEnergy,
	"dcgm_pcie_tx_throughput":                DevPCIeTxThroughput,
	"dcgm_pcie_rx_throughput":                DevPCIeRxThroughput,
	"dcgm_pcie_replay_counter":               DevPCIeReplayCounter,
	"dcgm_gpu_utilization":                   DevGPUUtil,
	"dcgm_mem_copy_utilization":              DevMemCopyUtil,
	"dcgm_enc_utilization":                   DevEncUtil,
	"dcgm_dec_utilization":                   DevDecUtil,
	"dcgm_xid_errors":                        DevXIDErrors,
	"dcgm_power_violation":                   devPowerViolation,
	"dcgm_thermal_violation":                 devThermalViolation,
	"dcgm_sync_boost_violation":              devSyncBoostViolation,
	"dcgm_board_limit_violation":             devBoardLimitViolation,
	"dcgm_low_util_violation":                devLowUtilViolation,
	"dcgm_reliability_violation":             devReliabilityViolation,
	"dcgm_fb_free":                           DevFBFree,
	"dcgm_fb_used":                           DevFBUsed,
	"dcgm_ecc_sbe_volatile_total":            devECCSBEVolatileTotal,
	"dcgm_ecc_dbe_volatile_total":            devECCDBEVolatileTotal,
	"dcgm_ecc_sbe_aggregate_total":           devECCSBEAggregateTotal,
	"dcgm_ecc_dbe_aggregate_total":           devECCDBEAggregateTotal,
	"dcgm_retired_pages_sbe":                 devRetiredSBE,
	"dcgm_retired_pages_dbe":                 devRetiredDBE,
	"dcgm_retired_pages_pending":             devRetiredPending,
	"dcgm_nvlink_flit_crc_error_count_total": devNVLinkFlitCRCTotal,
	"dcgm_nvlink_data_crc_error_count_total": devNVLinkDataCRCTotal,
	"dcgm_nvlink_replay_error_count_total":   devNVLinkReplayTotal,
	"dcgm_nvlink_recovery_error_count_total": devNVLinkRecoveryTotal,
	"dcgm_nvlink_bandwidth_total":            DevNVLinkBandwidthTotal,
}

// FieldByName returns the field a metric name stands for: a DCGM_FI_ name in
// any case (the 1.x exporter wrote profiling fields as dcgm_fi_prof_…) or a
// 1.x name such as dcgm_gpu_utilization.
func FieldByName(name string) (FieldID, bool) {
	if id, ok := names[name]; ok {
		return id, true
	}
	if up := strings.ToUpper(name); strings.HasPrefix(up, "DCGM_FI_") {
		id, ok := names[up]
		return id, ok
	}
	id, ok := legacyNames[name]
	return id, ok
}

// DCGM's blank values: sentinels a field holds when it has no data (not
// supported, not found, not permitted). Each kind is a block of 16 values.
const (
	int32Blank = 0x7ffffff0
	int64Blank = 0x7ffffffffffffff0
	fp64Blank  = 140737488355328.0 // 2^47
)

// IsBlank reports whether v is one of DCGM's blank sentinels as the exporter
// prints them (a 32- or 64-bit integer blank, or the floating-point one), or
// is not a number at all. Recent exporters skip blank fields; older ones
// print them.
func IsBlank(v float64) bool {
	switch {
	case math.IsNaN(v), math.IsInf(v, 0):
		return true
	case v >= int32Blank && v <= int32Blank+15:
		return true
	case v >= fp64Blank && v <= fp64Blank+15:
		return true
	case v >= float64(int64Blank):
		// float64 cannot tell the 16 values apart; anything this large is
		// no counter reading.
		return true
	}
	return false
}
