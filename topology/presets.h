// Named hardware presets: devices, nodes and fabrics. Every number comes from a public
// datasheet or from the textbook chapter's baseline; the source sits beside it in
// presets.cpp. Names are lower-case with dashes ("h100-sxm5", "hgx-h100", "ib-ndr").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "topology/hardware_spec.h"

namespace topology {

std::optional<DeviceSpec> device_preset(std::string_view name);
std::optional<NodeSpec> node_preset(std::string_view name);
std::optional<FabricSpec> fabric_preset(std::string_view name);
// Parameter-server NIC presets reuse the fabric link classes ("eth-100g", ...).
std::optional<LinkSpec> server_nic_preset(std::string_view name);

std::vector<std::string> device_preset_names();
std::vector<std::string> node_preset_names();
std::vector<std::string> fabric_preset_names();
std::vector<std::string> server_nic_preset_names();

// The host CPUs' vendors by their scenario names ("intel", "amd", "arm").
std::vector<std::string> host_cpu_names();
std::optional<HostCpu> host_cpu(std::string_view name);
std::string_view host_cpu_name(HostCpu host_cpu);

// The fused attention kernels by their scenario names ("flash2", "flash1", "triton").
const std::vector<std::pair<std::string, AttentionKernel>>& attention_kernels();
std::vector<std::string> attention_kernel_names();
std::optional<AttentionKernel> attention_kernel(std::string_view name);
std::string_view attention_kernel_name(AttentionKernel kernel);

// The Hopper GPUs' measurements (presets.cpp cites the sources): sustained GEMM rates (the
// H200's; they stand in for the H100 SXM5's) and memory-bound kernel rates. The H200's are
// what the compute model assumes of a device nobody has measured.
inline constexpr double kHopperExposedGemmTraffic = 0.10;
inline constexpr GemmMeasurement kHopperGemm = {708.5 / 989.4, 8192, 8448, 20480,
                                                kHopperExposedGemmTraffic};
inline constexpr GemmMeasurement kHopperFp8Gemm = {1288.7 / 1978.9, 8448, 8192, 16384,
                                                   kHopperExposedGemmTraffic};
inline constexpr MemoryKernelRates kH100Memory = {2.97 / 3.35, 0.525, 0.336, 1.89 / 3.35};
inline constexpr MemoryKernelRates kH200Memory = {4.15 / 4.8, 2.71 / 4.8, 1.46 / 4.8, 1.88 / 4.8};

// Gives `device` the compute model's measurements of `architecture` (SMs, GEMM and memory
// efficiencies, attention curves), keeping its own name and datasheet rates.
void adopt_measurements(DeviceSpec& device, const DeviceSpec& architecture);

// One line per preset for `dtsim presets`.
std::string describe(const DeviceSpec& device);
std::string describe(const NodeSpec& node);
std::string describe(const FabricSpec& fabric);

}  // namespace topology
