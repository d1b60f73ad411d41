// Device presets carry the datasheet figures listed in VALIDATION.md ("Hardware facts").
#include "topology/presets.h"

#include <gtest/gtest.h>

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
                                         DeviceFacts{"h200-sxm", 989, 141, 4.8, 450}));

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

TEST(NodePresetTest, PcieServersHaveNoNvlinkAndShareNics) {
  const auto node = topology::node_preset("pcie-h100");
  ASSERT_TRUE(node.has_value());
  EXPECT_EQ(node->kind, topology::NodeKind::kPcie);
  EXPECT_LT(node->nics, node->gpus);
  EXPECT_DOUBLE_EQ(node->pcie.bandwidth, 64e9);  // PCIe Gen5 x16
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
