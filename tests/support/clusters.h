// Test clusters: n HGX H100 nodes (8 GPUs on NVSwitch, 8 NDR 400 NICs each) on an InfiniBand
// NDR fat-tree with the presets' defaults.
#pragma once

#include "topology/hardware_spec.h"
#include "topology/presets.h"

namespace test_support {

inline topology::ClusterSpec hgx_cluster(int nodes) {
  topology::ClusterSpec spec;
  spec.node = *topology::node_preset("hgx-h100");
  spec.nodes = nodes;
  spec.fabric = *topology::fabric_preset("ib-ndr");
  return spec;
}

}  // namespace test_support
