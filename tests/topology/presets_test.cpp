// Device presets carry the datasheet figures listed in VALIDATION.md ("Hardware facts") and, for
// Blackwell, NVIDIA's HGX B200 and GB200 NVL72 specifications (presets.cpp cites them).
#include "topology/presets.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>

#include "topology/cluster.h"

namespace {

struct DeviceFacts {
  const char* preset;
  double bf16_tflops;
  double memory_gb;
  double memory_tbyte_s;
  double nvlink_gbyte_s;
};

class DevicePresetTest : public testing::TestWithParam<DeviceFacts> {};

TEST_P(DevicePresetTest, MatchesTheDatasheet) {
  const DeviceFacts& facts = GetParam();
  const auto device = topology::device_preset(facts.preset);
  ASSERT_TRUE(device.has_value());
  EXPECT_NEAR(device->bf16_flops / 1e12, facts.bf16_tflops, 0.5);
  EXPECT_DOUBLE_EQ(device->fp16_flops, device->bf16_flops);
  EXPECT_DOUBLE_EQ(device->memory_bytes, facts.memory_gb * 1e9);
  EXPECT_NEAR(device->memory_bandwidth / 1e12, facts.memory_tbyte_s, 0.01);
  EXPECT_DOUBLE_EQ(device->nvlink_bandwidth, facts.nvlink_gbyte_s * 1e9);
}

INSTANTIATE_TEST_SUITE_P(Validation, DevicePresetTest,
                         testing::Values(DeviceFacts{"a100-sxm4-80gb", 312, 80, 2.04, 300},
                                         DeviceFacts{"h100-sxm5", 989, 80, 3.35, 450},
                                         DeviceFacts{"h200-sxm", 989, 141, 4.8, 450},
                                         DeviceFacts{"b200", 2250, 180, 7.7, 900},
                                         DeviceFacts{"gb200", 2500, 186, 8.0, 900},
                                         DeviceFacts{"mi300x", 1307.4, 192, 5.3, 448}));

TEST(FabricPresetTest, LineRatesAndWhatNcclTestsMeasureOnThem) {
  // NDR 400 Gb/s = 50 GB/s per port, of which nccl-tests measure 46–49 GB/s (47.5); HDR
  // 200 Gb/s = 25 GB/s, of which 24 (presets.cpp cites both).
  const auto ndr = topology::fabric_preset("ib-ndr");
  ASSERT_TRUE(ndr.has_value());
  EXPECT_DOUBLE_EQ(ndr->nic.bandwidth, 50e9);
  EXPECT_NEAR(ndr->nic.effective_bandwidth(), 47.5e9, 1e3);
  EXPECT_DOUBLE_EQ(topology::fabric_preset("ib-hdr")->nic.bandwidth, 25e9);
  EXPECT_NEAR(topology::fabric_preset("ib-hdr")->nic.effective_bandwidth(), 24e9, 1e3);
  EXPECT_FALSE(topology::fabric_preset("ethernet-9000").has_value());
}

TEST(NodePresetTest, NvlinkReachesWhatNcclTestsMeasure) {
  // all_reduce bus bandwidth: 230.8 GB/s on 8 × A100 (NVLink 3, 300 GB/s), 365.6 on 8 × H200
  // without NVLink SHARP (NVLink 4, 450 GB/s).
  EXPECT_NEAR(topology::node_preset("dgx-a100")->nvlink.effective_bandwidth(), 230.8e9, 1e3);
  EXPECT_NEAR(topology::node_preset("hgx-h100")->nvlink.effective_bandwidth(), 365.6e9, 1e3);
  EXPECT_NEAR(topology::node_preset("hgx-h200")->nvlink.effective_bandwidth(), 365.6e9, 1e3);
}

// GB200 NVL72: the rack is one NVLink domain of 72 GPUs, each with its own NIC, so tensor and
// expert parallel groups up to 72 GPUs never leave NVLink.
TEST(NodePresetTest, Gb200Nvl72IsOneNvlinkDomainOf72Gpus) {
  const auto node = topology::node_preset("gb200-nvl72");
  ASSERT_TRUE(node.has_value());
  EXPECT_EQ(node->kind, topology::NodeKind::kNvSwitch);
  EXPECT_EQ(node->gpus, 72);
  EXPECT_EQ(node->nics, 72);
  EXPECT_TRUE(node->nvlink_sharp);
  EXPECT_DOUBLE_EQ(node->nvlink.bandwidth, 900e9);  // NVLink 5: 1.8 TB/s both directions
  topology::ClusterSpec spec;
  spec.node = *node;
  spec.nodes = 2;
  spec.fabric = *topology::fabric_preset("ib-ndr");
  spec.fabric.rail_optimized = true;
  const topology::Cluster cluster(spec);
  for (const auto& [a, b] : {std::pair{0, 71}, std::pair{5, 40}}) {
    const topology::Path path = cluster.route(a, b, 0);
    ASSERT_EQ(path.size(), 2u);
    for (topology::LinkId link : path) EXPECT_EQ(cluster.link(link).link_class, topology::LinkClass::kNvlink);
  }
  EXPECT_GT(cluster.route(0, 72, 0).size(), 2u);  // the next rack is over the fabric
}

// MI300X platform: every GPU linked directly to the seven others at 64 GB/s per direction, of
// which ~48 usable (AMD); a GPU's traffic to one peer takes that one link.
TEST(NodePresetTest, Mi300xIsAFullMeshOfXgmiLinks) {
  const auto node = topology::node_preset("mi300x-8");
  ASSERT_TRUE(node.has_value());
  EXPECT_EQ(node->kind, topology::NodeKind::kFullMesh);
  EXPECT_DOUBLE_EQ(node->nvlink.bandwidth, 64e9);
  EXPECT_NEAR(node->nvlink.effective_bandwidth(), 48e9, 1e3);
  EXPECT_FALSE(node->nvlink_sharp);
  topology::ClusterSpec spec;
  spec.node = *node;
  spec.nodes = 1;
  spec.fabric = *topology::fabric_preset("ib-ndr");
  const topology::Cluster cluster(spec);
  std::set<topology::LinkId> links;
  for (int peer = 1; peer < 8; ++peer) {
    const topology::Path path = cluster.route(0, peer, 0);
    ASSERT_EQ(path.size(), 1u);
    EXPECT_EQ(cluster.link(path[0]).link_class, topology::LinkClass::kNvlink);
    links.insert(path[0]);
  }
  EXPECT_EQ(links.size(), 7u);  // a link per peer
}

TEST(FabricPresetTest, RailOptimizedThreeTierPresetsAreKAryFatTrees) {
  // k-ary fat-tree: k/2 NICs per leaf, k/2 leaves per pod, full bisection at both tiers.
  for (const auto& [name, radix] : {std::pair{"ib-ndr-rail", 64}, std::pair{"roce-400-rail", 128}}) {
    const auto fabric = topology::fabric_preset(name);
    ASSERT_TRUE(fabric.has_value()) << name;
    EXPECT_TRUE(fabric->rail_optimized);
    EXPECT_EQ(fabric->leaf_down_ports, radix / 2);
    EXPECT_EQ(fabric->pod_leaves, radix / 2);
    EXPECT_DOUBLE_EQ(fabric->oversubscription, 1.0);
    EXPECT_DOUBLE_EQ(fabric->spine_oversubscription, 1.0);
    EXPECT_DOUBLE_EQ(fabric->nic.bandwidth, 50e9);
  }
}

TEST(NodePresetTest, PcieServersHaveNoNvlinkAndShareNics) {
  const auto node = topology::node_preset("pcie-h100");
  ASSERT_TRUE(node.has_value());
  EXPECT_EQ(node->kind, topology::NodeKind::kPcie);
  EXPECT_LT(node->nics, node->gpus);
  EXPECT_DOUBLE_EQ(node->pcie.bandwidth, 64e9);  // PCIe Gen5 x16
}

// Each device names the GPU links it has: NVLink on NVIDIA's, Infinity Fabric on AMD's, none
// on a PCIe card or a CPU (all were "NVLink", at 0 GB/s where there is none).
TEST(PresetNamesTest, DescriptionsNameTheGpuLinksEachDeviceHas) {
  const auto text = [](const char* name) {
    return topology::describe(*topology::device_preset(name));
  };
  EXPECT_NE(text("h100-sxm5").find("NVLink 450 GB/s per direction"), std::string::npos);
  EXPECT_NE(text("mi300x").find("Infinity Fabric 448 GB/s per direction"), std::string::npos);
  EXPECT_NE(text("h100-pcie").find("no NVLink"), std::string::npos);
  EXPECT_EQ(text("grace").find("NVLink"), std::string::npos);
}

TEST(PresetNamesTest, EveryListedNameResolves) {
  for (const auto& name : topology::device_preset_names()) EXPECT_TRUE(topology::device_preset(name)) << name;
  for (const auto& name : topology::node_preset_names()) EXPECT_TRUE(topology::node_preset(name)) << name;
  for (const auto& name : topology::fabric_preset_names()) EXPECT_TRUE(topology::fabric_preset(name)) << name;
  for (const auto& name : topology::server_nic_preset_names()) {
    EXPECT_TRUE(topology::server_nic_preset(name)) << name;
  }
}

}  // namespace
