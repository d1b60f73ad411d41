// Named hardware presets: devices, nodes and fabrics. Every number comes from a public
// datasheet or from the textbook chapter's baseline; the source sits beside it in
// presets.cpp. Names are lower-case with dashes ("h100-sxm5", "hgx-h100", "ib-ndr").
#pragma once

#include <optional>
#include <string>
#include <string_view>
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

// One line per preset for `dtsim presets`.
std::string describe(const DeviceSpec& device);
std::string describe(const NodeSpec& node);
std::string describe(const FabricSpec& fabric);

}  // namespace topology
