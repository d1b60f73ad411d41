// A GPU rank's share of its node's host: the CPU an offloaded optimizer steps on and the link
// its host<->device copies cross (hardware_spec.h).
#include "topology/hardware_spec.h"

#include <algorithm>

namespace topology {

DeviceSpec host_share_per_gpu(const ClusterSpec& cluster) {
  const NodeSpec& node = cluster.node;
  DeviceSpec share = node.host ? node.host->cpu : cluster.parameter_servers.host;
  const double sharing =
      std::max(1, node.host ? std::min(node.host->gpus_per_cpu, node.gpus) : node.gpus);
  for (double* rate : {&share.bf16_flops, &share.fp16_flops, &share.fp32_flops, &share.tf32_flops,
                       &share.fp8_flops, &share.memory_bandwidth}) {
    *rate /= sharing;
  }
  return share;
}

LinkSpec host_link_per_gpu(const NodeSpec& node) {
  if (!node.host) return node.pcie;  // a PCIe x16 link of each GPU's own
  LinkSpec share = node.host->link;
  share.bandwidth /= std::max(1, std::min(node.host->gpus_per_cpu, node.gpus));
  return share;
}

}  // namespace topology
