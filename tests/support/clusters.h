// Test clusters: n HGX H100 nodes (8 GPUs on NVSwitch, 8 NDR 400 NICs each) on an InfiniBand
// NDR fat-tree, with the link efficiencies of the chapter's baseline (NVLink at its 450 GB/s
// line rate, NDR at 40 of 50 GB/s) so that the network models' tests check their formulas with
// round numbers, whatever the presets' measured efficiencies are.
#pragma once

#include "sim/net/network_model.h"
#include "topology/hardware_spec.h"
#include "topology/presets.h"

namespace test_support {

inline topology::ClusterSpec hgx_cluster(int nodes) {
  topology::ClusterSpec spec;
  spec.node = *topology::node_preset("hgx-h100");
  spec.nodes = nodes;
  spec.fabric = *topology::fabric_preset("ib-ndr");
  spec.node.nvlink.efficiency = 1.0;
  spec.fabric.nic.efficiency = 0.8;
  spec.fabric.uplink.efficiency = 0.8;
  return spec;
}

// Network options that price collectives with the links' α-β alone and any of dtsim's
// schedules (collectives.library = "ideal"), the textbook model the closed forms describe.
inline sim::NetworkOptions textbook_network_options() {
  sim::NetworkOptions options;
  options.library = "ideal";
  return options;
}

}  // namespace test_support
