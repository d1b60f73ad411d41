// Scenario loading: every example scenario loads; every broken one fails with one message that
// names file:line, the key, what is expected and a hint; overrides and sweeps.
#include "scenarios/scenario_loader.h"

#include "scenarios/run_scenario.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "tests/support/temporary_directory.h"
#include "topology/presets.h"

namespace {

const std::string kSource = DTSIM_SOURCE_DIR;

TEST(ScenarioLoaderTest, EveryExampleScenarioLoads) {
  // Except the rule examples (r*.toml), which show what the checker rejects.
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kSource + "/scenarios")) {
    if (entry.path().extension() != ".toml" || entry.path().filename().string().front() == 'r') continue;
    try {
      EXPECT_EQ(scenarios::load_scenario(entry.path().string()).warnings, std::vector<std::string>{}) << entry.path();
    } catch (const scenarios::ScenarioError& error) {
      ADD_FAILURE() << entry.path() << ": " << error.what();
    }
    ++count;
  }
  EXPECT_GE(count, 6);
}

TEST(ScenarioLoaderTest, DefaultsComeFromPresetsAndTheFileOverridesThem) {
  const scenarios::Scenario s = scenarios::load_scenario(kSource + "/scenarios/c3_70b_ddp_64gpu.toml");
  EXPECT_EQ(s.name, "c3_70b_ddp_64gpu");
  EXPECT_EQ(s.cluster.nodes, 8);
  EXPECT_EQ(s.cluster.gpu_count(), 64);
  EXPECT_DOUBLE_EQ(s.cluster.fabric.nic.effective_bandwidth(), 40e9);
  EXPECT_DOUBLE_EQ(s.cluster.node.nvlink.latency, 0);
  EXPECT_DOUBLE_EQ(*s.lowering.model.parameter_count, 70e9);
  EXPECT_EQ(s.lowering.parallel.dp, 64);            // derived: all GPUs
  EXPECT_EQ(s.lowering.training.accumulation, 1);   // derived: 64 / (1 × 64)
  EXPECT_EQ(s.network.ring_channels, 1);
  EXPECT_EQ(s.lowering.ddp.bucket_cap_mb, 25);      // PyTorch's default
}

TEST(ScenarioLoaderTest, AGpuGivenByItsRatesBorrowsItsArchitecturesMeasuredCurves) {
  // A hypothetical 2.25 PFLOP/s part that computes like an H100: the H100's 132 SMs, its GEMM
  // and memory-bound kernel measurements, its attention curves as fractions of the new peak, the rates its own.
  scenarios::ScenarioDocument document = scenarios::ScenarioDocument::from_string(
      "[cluster]\nnodes = 1\ninterconnect = \"pcie\"\n[cluster.gpu]\npreset = \"l40s\"\nbf16_tflops = 2250\narchitecture = \"h100-sxm5\"\n"
      "[model]\npreset = \"llama-2-7b\"\n[training]\nglobal_batch = 8\n",
      "test.toml");
  const topology::DeviceSpec gpu = document.read().cluster.node.gpu;
  const topology::DeviceSpec h100 = *topology::device_preset("h100-sxm5");
  EXPECT_DOUBLE_EQ(gpu.bf16_flops, 2250e12);
  EXPECT_EQ(gpu.name, topology::device_preset("l40s")->name);
  EXPECT_EQ(gpu.sms, 132);
  EXPECT_DOUBLE_EQ(gpu.gemm_sustained.fraction_of_peak, h100.gemm_sustained.fraction_of_peak);
  EXPECT_DOUBLE_EQ(gpu.memory_kernels.norm_backward, h100.memory_kernels.norm_backward);
  EXPECT_EQ(gpu.attention_by_sequence, h100.attention_by_sequence);
  EXPECT_EQ(gpu.nccl_architecture, topology::NcclArchitecture::kHopper);  // not the L40S's Ampere
}

// The node a scenario's [cluster] lines (on two nodes) describe.
topology::NodeSpec node_of(const std::string& cluster) {
  return scenarios::ScenarioDocument::from_string(
             "[cluster]\nnodes = 2\n" + cluster +
                 "[model]\npreset = \"tiny-256\"\n[training]\nglobal_batch = 288\n",
             "test.toml")
      .read()
      .cluster.node;
}

TEST(ScenarioLoaderTest, TheHostCpuComesFromTheNodePresetUnlessTheScenarioNamesIt) {
  const auto host_of = [](const std::string& cluster) { return node_of(cluster).host_cpu; };
  EXPECT_EQ(host_of(""), topology::HostCpu::kIntel);  // hgx-h100
  EXPECT_EQ(host_of("node = \"dgx-a100\"\n"), topology::HostCpu::kAmd);
  EXPECT_EQ(host_of("node = \"gb200-nvl72\"\n[cluster.fabric]\nrail_optimized = true\n"),
            topology::HostCpu::kArm);
  EXPECT_EQ(host_of("node = \"dgx-a100\"\nhost_cpu = \"intel\"\n"), topology::HostCpu::kIntel);
  EXPECT_EQ(host_of("host_cpu = \"amd\"\n"), topology::HostCpu::kAmd);
}

// Another GPU count keeps the preset's NICs per GPU: a GB200 rack cut to 8 GPUs kept its 72 NICs,
// which no 32-port leaf of the default fabric holds (the scenario was refused for a key it never
// set).
TEST(ScenarioLoaderTest, NicsFollowTheGpuCountUnlessTheScenarioNamesThem) {
  const auto nics_of = [](const std::string& cluster) { return node_of(cluster).nics; };
  EXPECT_EQ(nics_of("node = \"gb200-nvl72\"\ngpus_per_node = 8\n"), 8);
  EXPECT_EQ(nics_of("gpus_per_node = 4\n"), 4);                        // hgx-h100: one per GPU
  EXPECT_EQ(nics_of("node = \"pcie-h100\"\ngpus_per_node = 4\n"), 2);  // 4 NICs for 8 GPUs
  EXPECT_EQ(nics_of("node = \"pcie-h100\"\ngpus_per_node = 3\n"), 2);  // ⌈1.5⌉
  EXPECT_EQ(nics_of("gpus_per_node = 4\nnics_per_node = 8\n"), 8);
}

// GB200's Grace-per-two-GPUs host belongs to its GPU, interconnect and host CPU; another of these
// is another node, which offloads to the server host over PCIe.
TEST(ScenarioLoaderTest, APresetsOwnHostStaysOnlyWithItsGpuInterconnectAndHostCpu) {
  const std::string gb200 = "node = \"gb200-nvl72\"\ngpus_per_node = 8\n";
  EXPECT_TRUE(node_of(gb200).host.has_value());
  EXPECT_TRUE(node_of(gb200 + "[cluster.gpu]\nbf16_tflops = 2000\n")
                  .host.has_value());  // the same GPU, derated
  EXPECT_FALSE(node_of(gb200 + "[cluster.gpu]\npreset = \"h100-sxm5\"\n").host.has_value());
  EXPECT_FALSE(node_of(gb200 + "interconnect = \"pcie\"\nnvlink_sharp = false\n").host.has_value());
  EXPECT_FALSE(node_of(gb200 + "host_cpu = \"intel\"\n").host.has_value());
  EXPECT_FALSE(node_of("").host.has_value());  // hgx-h100: the server host
}

struct BrokenCase {
  const char* file;
  const char* location;  // "line:column" expected after the file name ("" = the file itself)
  const char* key;
  const char* message;   // a fragment of the message
  const char* hint;      // a fragment of the hint ("" = none expected)
};

void PrintTo(const BrokenCase& c, std::ostream* os) { *os << c.file; }

class BrokenScenarioTest : public testing::TestWithParam<BrokenCase> {};

TEST_P(BrokenScenarioTest, FailsWithOneClearMessage) {
  const BrokenCase& c = GetParam();
  const std::string path = kSource + "/tests/scenarios/broken/" + c.file;
  try {
    scenarios::load_scenario(path);
    FAIL() << c.file << " was accepted";
  } catch (const scenarios::ScenarioError& error) {
    const std::string expected_location = std::string(c.location).empty() ? path : path + ":" + c.location;
    EXPECT_EQ(error.location(), expected_location) << error.what();
    EXPECT_EQ(error.key(), c.key) << error.what();
    EXPECT_NE(error.message().find(c.message), std::string::npos) << error.what();
    EXPECT_NE(error.hint().find(c.hint), std::string::npos) << error.what();
    // what() is the single line a user sees.
    EXPECT_EQ(std::string(error.what()).find('\n'), std::string::npos);
    EXPECT_EQ(std::string(error.what()).rfind(path, 0), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Corpus, BrokenScenarioTest,
    testing::Values(
        BrokenCase{"syntax_error.toml", "1:9", "", "TOML syntax error", "toml.io"},
        BrokenCase{"unknown_key.toml", "11:18", "ddp.bucket_cap_mbb", "unknown key in [ddp]",
                   "did you mean \"ddp.bucket_cap_mb\"?"},
        BrokenCase{"unknown_table.toml", "10:1", "netwrk", "unknown key",
                   "did you mean \"network\"?"},
        BrokenCase{"wrong_type.toml", "2:9", "cluster.nodes", "expected an integer, got \"two\"",
                   ""},
        BrokenCase{"missing_nodes.toml", "1:1", "cluster.nodes", "missing required key",
                   "nodes = 2"},
        BrokenCase{"missing_global_batch.toml", "7:1", "training.global_batch",
                   "missing required key", "sequences per optimizer step"},
        BrokenCase{"zero_gpus.toml", "3:17", "cluster.gpus_per_node",
                   "expected an integer between 1 and 576, got 0", ""},
        BrokenCase{"negative_bandwidth.toml", "5:21", "cluster.nvlink.bandwidth_gbyte_s",
                   "expected a positive number, got -450", ""},
        BrokenCase{"r2_world_size.toml", "12:6", "parallel.dp",
                   "dp × tp × pp = 8 × 8 × 2 = 128 does not match the cluster's 64 GPUs",
                   "cluster.nodes × gpus_per_node"},
        BrokenCase{"r2_misspelt_degree.toml", "14:7", "parallel.tpp", "unknown key in [parallel]",
                   "did you mean \"parallel.tp\"?"},
        BrokenCase{"r3_global_batch.toml", "9:16", "training.global_batch",
                   "global batch 128 != micro_batch 2 × gradient_accumulation 4 × dp 8 = 64",
                   "micro-batch × accumulation steps × data-parallel size"},
        BrokenCase{"batch_not_divisible.toml", "8:16", "training.global_batch",
                   "not a multiple of micro_batch 1 × dp 8", ""},
        BrokenCase{"unknown_model.toml", "5:10", "model.preset", "unknown value \"llama-2-7\"",
                   "did you mean \"llama-2-7b\"?"},
        BrokenCase{"bad_efficiency.toml", "5:14", "cluster.fabric.nic.efficiency",
                   "expected a fraction in (0, 1], got 1.5", "share of the peak"},
        BrokenCase{"unsorted_memory_curve.toml", "11:29", "compute.memory_efficiency_by_size",
                   "in ascending bytes moved, efficiencies in (0, 1], got [65536, 0.9]", ""},
        BrokenCase{"ps_without_servers.toml", "11:12", "parallel.strategy",
                   "needs parameter servers", "[cluster.parameter_servers]"},
        BrokenCase{"asp_under_the_analytic_model.toml", "21:9", "network.model",
                   "ps.consistency = \"asp\" under network.model = \"analytic\": the analytic "
                   "model prices each "
                   "of the 16 workers' pushes and pulls alone",
                   "use network.model = \"flow\""},
        BrokenCase{
            "degrees_overflow.toml", "12:6", "parallel.tp",
            "world size dp × tp × pp × cp = 1 × 2048 × 2048 × 2048 = 8589934592 does not match the "
            "cluster's 2048 GPUs",
            ""},
        BrokenCase{"heads_do_not_divide_hidden.toml", "7:9", "model.heads",
                   "hidden size 4100 is not divisible by 32 heads", ""},
        BrokenCase{"custom_model_without_vocab.toml", "4:1", "model.vocab", "missing required key",
                   "model.preset"},
        BrokenCase{"two_bandwidth_units.toml", "6:20", "cluster.pcie.bandwidth_gbit_s",
                   "give the bandwidth once", "GB/s"},
        BrokenCase{"empty_sweep_axis.toml", "11:23", "sweep.ddp.bucket_cap_mb",
                   "expected a non-empty array", ""},
        BrokenCase{"sweep_unquoted_dotted_key.toml", "11:1", "sweep.ddp",
                   "an unquoted dotted key, which TOML reads as the table [sweep.ddp]",
                   "quote the scenario key: \"ddp.bucket_cap_mb\" = [...]"},
        BrokenCase{"sp_without_tp.toml", "11:21", "parallel.sequence_parallel",
                   "but parallel.tp is 1", "parallel.tp > 1"},
        BrokenCase{"hybrid_shard_one_node.toml", "14:21", "fsdp.sharding_strategy",
                   "the 8 data-parallel ranks fit in one node (cluster.nodes = 1", "FULL_SHARD"},
        BrokenCase{"stages_exceed_layers.toml", "12:6", "parallel.pp",
                   "8 pipeline stages exceed the model's 4 layers (model.layers)", ""},
        BrokenCase{"too_few_micro_batches.toml", "13:6", "parallel.pp",
                   "1F1B on 2 stages (parallel.pp) needs at least 2 micro-batches, got 1",
                   "gradient_accumulation"},
        BrokenCase{"fsdp_with_pipeline.toml", "12:6", "parallel.pp", "FSDP shards parameters",
                   "zero.stage = 1"},
        BrokenCase{"unknown_sharding_strategy.toml", "14:21", "fsdp.sharding_strategy",
                   "unknown value \"FULL_SHARDED\"", "did you mean \"FULL_SHARD\"?"},
        BrokenCase{"table_expected.toml", "1:11", "cluster", "expected a table, got 5",
                   "[cluster]"},
        BrokenCase{"bad_ring_channels.toml", "11:17", "network.ring_channels",
                   "expected \"auto\" or an integer >= 1, got \"many\"", "one ring per NIC"},
        BrokenCase{"oversubscription_below_one.toml", "5:20", "cluster.fabric.oversubscription",
                   "expected a ratio >= 1", ""},
        BrokenCase{
            "spine_oversubscription_uneven.toml", "6:26", "cluster.fabric.spine_oversubscription",
            "divides pod_leaves (4) into whole uplinks, got 3", "halves the spines' uplinks"},
        BrokenCase{"rail_pod_splits_groups.toml", "6:14", "cluster.fabric.pod_leaves",
                   "a rail-optimized pod holds whole rail groups of 8 leaves (one per NIC of a "
                   "node: cluster.nics_per_node = 8), got 12",
                   "pod_leaves = 8, or cluster.nics_per_node = 6"},
        BrokenCase{"pcie_gpu_on_nvswitch.toml", "1:1", "cluster.interconnect",
                   "an NVSwitch node needs GPU links, but L40S has none",
                   "interconnect = \"pcie\""},
        BrokenCase{"kernel_without_flash.toml", "12:20", "compute.attention_kernel",
                   "a fused attention kernel needs model.attention = \"flash\"",
                   "remove compute.attention_kernel"},
        BrokenCase{"unknown_attention_kernel.toml", "11:20", "compute.attention_kernel",
                   "unknown value \"flash3\"; expected one of: flash2, flash1, triton",
                   "did you mean \"flash2\"?"},
        BrokenCase{"unknown_architecture.toml", "6:16", "cluster.gpu.architecture",
                   "unknown value \"h100-sxm\"", "did you mean \"h100-sxm5\"?"},
        BrokenCase{"unknown_host_cpu.toml", "3:12", "cluster.host_cpu",
                   "unknown value \"amdd\"; expected one of: intel, amd, arm",
                   "did you mean \"amd\"?"},
        BrokenCase{"tp_overlap_without_sp.toml", "12:19", "parallel.tp_comm_overlap",
                   "but parallel.sequence_parallel is off", "set sequence_parallel = true"},
        BrokenCase{"sharp_on_roce.toml", "6:9", "cluster.fabric.sharp",
                   "runs on InfiniBand switches, but this fabric is RoCE", "set sharp = false"},
        BrokenCase{"param_gather_without_zero.toml", "11:24", "zero.overlap_param_gather",
                   "but parallel.strategy is \"ddp\"", "set parallel.strategy = \"zero\""},
        BrokenCase{"tp_overlap_uneven_tokens.toml", "14:19", "parallel.tp_comm_overlap",
                   "micro-batch × sequence = 4095 tokens over tp = 8", "whose tokens tp divides"},
        BrokenCase{"ep_does_not_divide_experts.toml", "11:6", "parallel.ep",
                   "ep = 16 does not divide the 8 experts", "an ep that divides 8"},
        BrokenCase{"ep_beyond_expert_group.toml", "13:6", "parallel.ep",
                   "ep × tp = 8 × 2 = 16 GPUs per expert group, but the expert groups are cut from "
                   "the dp × tp = 4 × 2",
                   "an ep that divides parallel.dp"},
        BrokenCase{"top_k_above_experts.toml", "8:9", "model.moe.top_k",
                   "top_k = 9 routes each token to more experts than the 8",
                   "top_k ≤ model.moe.experts"},
        BrokenCase{"capacity_factor_zero.toml", "8:19", "model.moe.capacity_factor",
                   "expected a positive number, got 0", "dropless"},
        BrokenCase{"moe_tp_without_sp.toml", "10:1", "parallel.sequence_parallel",
                   "a MoE layer under tensor parallelism needs sequence parallelism",
                   "set sequence_parallel = true"},
        BrokenCase{"ep_on_dense_model.toml", "11:6", "parallel.ep", "Llama-2-7B is a dense model",
                   "use a MoE preset"},
        BrokenCase{"cp_does_not_divide_sequence.toml", "12:6", "parallel.cp",
                   "cp = 8 does not divide the sequence of 8200 tokens", "a multiple of 16"},
        BrokenCase{"all_gather_cp_does_not_balance_sequence.toml", "12:6", "parallel.cp",
                   "into the 2·cp = 4 chunks that balance the causal mask", "a multiple of 4"},
        BrokenCase{"ulysses_heads_not_divisible.toml", "14:13", "parallel.cp_scheme",
                   "Ulysses splits the heads over cp = 2, but each tensor-parallel rank holds 4 "
                   "heads and 1 KV heads",
                   "cp_scheme = \"ring\""},
        BrokenCase{"moe_all_layers_dense.toml", "9:22", "model.moe.first_dense_layers",
                   "4 dense layers leave none of the model's 4 layers a mixture of experts",
                   "first_dense_layers < model.layers"},
        BrokenCase{"slow_rank_outside_cluster.toml", "11:14", "stragglers.slow_ranks",
                   "expected a list of GPU ranks from 0 to 7, got [3, 8]", "slow_factor = 1.3"},
        BrokenCase{"slow_rank_twice.toml", "11:14", "stragglers.slow_ranks",
                   "rank 3 is listed twice", "list each slow rank once"},
        BrokenCase{"slow_factor_without_ranks.toml", "11:15", "stragglers.slow_factor",
                   "slow_ranks and slow_factor go together", "slow_ranks = [5]"},
        BrokenCase{"unknown_optimizer_implementation.toml", "9:28",
                   "training.optimizer_implementation",
                   "unknown value \"apex\"; expected one of: fused, torch, composer", ""},
        BrokenCase{"composer_adam.toml", "10:28", "training.optimizer_implementation",
                   "Composer has no Adam, only DecoupledAdamW and DecoupledSGDW",
                   "optimizer = \"adamw\""},
        BrokenCase{"negative_weight_decay.toml", "9:16", "training.weight_decay",
                   "expected a number >= 0, got -0.1", ""},
        BrokenCase{"empty.toml", "1:1", "cluster.nodes", "missing required key", ""}),
    [](const testing::TestParamInfo<BrokenCase>& param_info) {
      std::string name = param_info.param.file;
      name = name.substr(0, name.find('.'));
      for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return name;
    });

TEST(ScenarioLoaderTest, MissingFileIsReported) {
  try {
    scenarios::load_scenario("/nonexistent/scenario.toml");
    FAIL();
  } catch (const scenarios::ScenarioError& error) {
    EXPECT_NE(std::string(error.what()).find("no such file"), std::string::npos);
  }
}

const std::string kDefault = kSource + "/scenarios/default.toml";

TEST(ScenarioOverrideTest, SetOverridesTypedValuesAndBareStrings) {
  const scenarios::Scenario s = scenarios::load_scenario(
      kDefault, {"ddp.bucket_cap_mb=50", "model.preset=llama-2-70b", "cluster.fabric.rail_optimized=true",
                 "network.ring_channels=2", "compute.matmul_efficiency=0.6"});
  EXPECT_EQ(s.lowering.ddp.bucket_cap_mb, 50);
  EXPECT_EQ(s.lowering.model.name, "Llama-2-70B");
  EXPECT_TRUE(s.cluster.fabric.rail_optimized);
  EXPECT_EQ(s.network.ring_channels, 2);
  EXPECT_EQ(s.efficiency.matmul, 0.6);
}

// The same key given twice with --set is one error naming both (the last silently won); a key
// of the file set once on the command line is an override, not a repeat.
TEST(ScenarioOverrideTest, SettingOneKeyTwiceIsAnError) {
  try {
    scenarios::load_scenario(
        kDefault, {"training.global_batch=32", "ddp.bucket_cap_mb=50", "training.global_batch=64"});
    FAIL() << "expected an error";
  } catch (const scenarios::ScenarioError& error) {
    EXPECT_EQ(error.location(), "--set training.global_batch=64");
    EXPECT_EQ(error.key(), "training.global_batch");
    EXPECT_EQ(error.message(),
              "set twice: --set training.global_batch=64 after --set training.global_batch=32");
  }
  EXPECT_EQ(scenarios::load_scenario(kDefault, {"training.global_batch=32"})
                .lowering.training.global_batch,
            32);
}

// A sweep axis given to --set (its dotted key nested a table under [sweep], an error then blamed
// on the file's first line) is one error naming the --set argument and the --sweep to use.
TEST(ScenarioOverrideTest, SweepAxesAreNotSetWithSet) {
  try {
    scenarios::load_scenario(kDefault, {"sweep.cluster.nodes=[1, 2]"});
    FAIL() << "expected an error";
  } catch (const scenarios::ScenarioError& error) {
    EXPECT_EQ(error.location(), "--set sweep.cluster.nodes=[1, 2]");
    EXPECT_EQ(error.key(), "sweep.cluster.nodes");
    EXPECT_EQ(error.hint(), "use dtsim sweep --sweep cluster.nodes=v1,v2,…");
  }
  EXPECT_THROW(scenarios::load_scenario(kDefault, {"sweep={}"}), scenarios::ScenarioError);
}

// output.trace_ranks: a list of ranks, or a string of items (ranks, ranges, first-node,
// critical, auto, all, none).
TEST(ScenarioLoaderTest, TraceRanksTakesAListOrAStringOfItems) {
  const scenarios::Scenario listed = scenarios::load_scenario(kDefault, {"output.trace_ranks=[3, 5]"});
  EXPECT_FALSE(listed.trace.automatic);
  EXPECT_EQ(listed.trace.ranges, (std::vector<std::pair<std::int32_t, std::int32_t>>{{3, 3}, {5, 5}}));
  const scenarios::Scenario items = scenarios::load_scenario(kDefault, {"output.trace_ranks=\"0-7, 896,critical\""});
  EXPECT_FALSE(items.trace.automatic);
  EXPECT_TRUE(items.trace.critical);
  EXPECT_FALSE(items.trace.first_node);
  EXPECT_EQ(items.trace.ranges, (std::vector<std::pair<std::int32_t, std::int32_t>>{{0, 7}, {896, 896}}));
  const scenarios::Scenario none = scenarios::load_scenario(kDefault, {"output.trace_ranks=\"none\""});
  EXPECT_FALSE(none.trace.automatic || none.trace.all || none.trace.critical || !none.trace.ranges.empty());
  EXPECT_TRUE(scenarios::load_scenario(kDefault, {"output.trace_ranks=\"all\""}).trace.all);
  EXPECT_TRUE(scenarios::load_scenario(kDefault).trace.automatic);
  for (const char* bad :
       {"output.trace_ranks=\"0-\"", "output.trace_ranks=\"critic\"", "output.trace_ranks=[-1]",
        "output.trace_ranks=\"9-2\"", "output.trace_ranks=4", "output.trace_ranks=\"all,none\""}) {
    EXPECT_THROW(scenarios::load_scenario(kDefault, {bad}), scenarios::ScenarioError) << bad;
  }
}

// A value that reads but no hardware has is a warning naming the key and where it was set, in
// the unit it was given in; every preset is plausible.
TEST(ScenarioLoaderTest, ImplausibleHardwareValuesAreWarnedAboutByKey) {
  const scenarios::Scenario bytes = scenarios::load_scenario(kDefault, {"cluster.gpu.memory_gb=141e9"});
  ASSERT_EQ(bytes.warnings.size(), 1u);
  EXPECT_EQ(bytes.warnings[0].rfind("--set cluster.gpu.memory_gb=141e9: cluster.gpu.memory_gb = 1.41e+11 GB is implausible", 0), 0u)
      << bytes.warnings[0];
  const scenarios::Scenario slow_fp8 =
      scenarios::load_scenario(kDefault, {"cluster.gpu.fp8_tflops=100"});
  ASSERT_EQ(slow_fp8.warnings.size(), 1u);
  EXPECT_NE(slow_fp8.warnings[0].find(
                "--set cluster.gpu.fp8_tflops=100: cluster.gpu.fp8_tflops = 100 TFLOP/s is below"),
            std::string::npos)
      << slow_fp8.warnings[0];
  const scenarios::Scenario slow_nic = scenarios::load_scenario(kDefault, {"cluster.fabric.nic.bandwidth_gbit_s=0.4"});
  ASSERT_EQ(slow_nic.warnings.size(), 1u);
  EXPECT_NE(slow_nic.warnings[0].find("cluster.fabric.nic.bandwidth_gbit_s = 0.4 Gb/s"), std::string::npos)
      << slow_nic.warnings[0];
  int loaded = 0;
  for (const std::string& node : topology::node_preset_names()) {
    try {  // a node of another size than the default's 8 GPUs does not make its 16-GPU layout
      for (const std::string& warning :
           scenarios::load_scenario(kDefault, {"cluster.node=" + node}).warnings) {
        EXPECT_EQ(warning.find("implausible"), std::string::npos) << node << ": " << warning;
      }
      ++loaded;
    } catch (const scenarios::ScenarioError&) {
    }
  }
  EXPECT_GE(loaded, 6);
}

// A key the rest of the scenario leaves without effect is a warning naming it, where it was set
// and why; the same key where it acts is none.
TEST(ScenarioLoaderTest, KeysTheScenarioLeavesWithoutEffectAreWarnedAbout) {
  const scenarios::Scenario inert = scenarios::load_scenario(
      kDefault, {"parallel.strategy=\"ddp\"", "zero.stage=2", "training.optimizer=\"adamw\"",
                 "training.sgd_momentum=0.5", "parallel.cp_scheme=\"ulysses\"",
                 "stragglers.sigma=0.2", "network.logp=true", "collectives.library=\"nccl\""});
  const std::vector<std::string> expected = {
      "--set zero.stage=2: zero.stage has no effect: parallel.strategy is \"ddp\"",
      "--set training.sgd_momentum=0.5: training.sgd_momentum has no effect: training.optimizer is "
      "\"adamw\"",
      "--set parallel.cp_scheme=\"ulysses\": parallel.cp_scheme has no effect: parallel.cp is 1",
      "--set stragglers.sigma=0.2: stragglers.sigma has no effect: stragglers.distribution is "
      "\"none\", not "
      "\"lognormal\"",
      "--set network.logp=true: network.logp has no effect: LogP overheads price the analytic "
      "network model's "
      "transfers under collectives.library = \"ideal\" only"};
  EXPECT_EQ(inert.warnings, expected);
  const scenarios::Scenario acting = scenarios::load_scenario(
      kDefault,
      {"parallel.strategy=\"zero\"", "zero.stage=2", "training.optimizer=\"sgd\"",
       "training.sgd_momentum=0.5", "stragglers.distribution=\"lognormal\"", "stragglers.sigma=0.2",
       "network.model=\"analytic\"", "network.logp=true", "collectives.library=\"ideal\""});
  EXPECT_EQ(acting.warnings, std::vector<std::string>{});
  // FSDP's min_num_params under the transformer-layer policy: a warning, as for any inert key (it
  // was an error, which broke a sweep over the policy).
  const std::string fsdp = "parallel.strategy=\"fsdp\"";
  EXPECT_EQ(
      scenarios::load_scenario(kDefault, {fsdp, "ddp.gradient_as_bucket_view=true"}).warnings,
      std::vector<std::string>{
          "--set ddp.gradient_as_bucket_view=true: ddp.gradient_as_bucket_view has no effect: "
          "parallel.strategy is \"fsdp\": FSDP reduces each unit's gradient where it lies, with no "
          "bucket copy"});
  EXPECT_EQ(scenarios::load_scenario(kDefault, {fsdp, "fsdp.min_num_params=1e9"}).warnings,
            std::vector<std::string>{
                "--set fsdp.min_num_params=1e9: fsdp.min_num_params has no effect: "
                "fsdp.auto_wrap_policy is \"transformer_layer\", not \"size_based\""});
  EXPECT_EQ(scenarios::load_scenario(
                kDefault, {fsdp, "fsdp.min_num_params=1e9", "fsdp.auto_wrap_policy=\"size_based\""})
                .warnings,
            std::vector<std::string>{});
}

// Without a pipeline its keys act on nothing, whatever tp is: scatter/gather was an error at
// tp 1 and silently ignored at tp 2, GPipe and blocking sends passed without a word.
TEST(ScenarioLoaderTest, PipelineKeysWithoutAPipelineAreWarnedAboutAtAnyTensorParallelDegree) {
  for (const char* tp : {"parallel.tp=1", "parallel.tp=2"}) {
    const scenarios::Scenario inert = scenarios::load_scenario(
        kDefault, {tp, "parallel.pipeline_scatter_gather=true",
                   "parallel.pipeline_schedule=\"gpipe\"", "parallel.pipeline_p2p_blocking=true"});
    EXPECT_EQ(
        inert.warnings,
        (std::vector<std::string>{
            "--set parallel.pipeline_scatter_gather=true: parallel.pipeline_scatter_gather has no "
            "effect: "
            "parallel.pp is 1",
            "--set parallel.pipeline_p2p_blocking=true: parallel.pipeline_p2p_blocking has no "
            "effect: "
            "parallel.pp is 1",
            "--set parallel.pipeline_schedule=\"gpipe\": parallel.pipeline_schedule has no effect: "
            "parallel.pp is 1"}))
        << tp;
  }
  // With one, scatter/gather at tp 1 is still the error it was.
  EXPECT_THROW(scenarios::load_scenario(kDefault,
                                        {"parallel.pp=2", "parallel.pipeline_scatter_gather=true"}),
               scenarios::ScenarioError);
  EXPECT_EQ(
      scenarios::load_scenario(kDefault, {"parallel.pp=2", "parallel.pipeline_schedule=\"gpipe\""})
          .warnings,
      std::vector<std::string>{});
}

TEST(ScenarioOverrideTest, CalibratedCurvesInterpolateInLogSize) {
  // 64 KiB at 1.0, 64 MiB at 0.25: 2 MiB is halfway in log(size) → 0.625; clamped outside.
  const scenarios::Scenario s = scenarios::load_scenario(
      kDefault, {"compute.memory_efficiency_by_size=[[65536, 1.0], [67108864, 0.25]]",
                 "compute.matmul_efficiency_by_size=[[1e6, 0.5], [1e9, 0.8]]"});
  EXPECT_DOUBLE_EQ(s.efficiency.memory_by_size.at(2097152), 0.625);
  EXPECT_DOUBLE_EQ(s.efficiency.memory_by_size.at(1024), 1.0);
  EXPECT_DOUBLE_EQ(s.efficiency.memory_by_size.at(1e12), 0.25);
  EXPECT_NEAR(s.efficiency.matmul_by_size.at(1e7), 0.6, 1e-12);  // a third of the way in log(FLOPs)
}

TEST(HardwareProfileTest, TheScenariosOwnEfficiencyBeatsTheProfilesCurve) {
  // A profile's memory curve replaces memory_efficiency — unless the scenario states that.
  const test_support::TemporaryDirectory directory("dtsim-profile");
  std::ofstream(directory / "profile.toml") << "[compute]\nmemory_efficiency_by_size = [[65536, 1.0], [67108864, 0.25]]\n";
  const std::string scenario = "[scenario]\nhardware_profile = \"profile.toml\"\n[cluster]\nnodes = 1\n"
                               "[model]\npreset = \"tiny-256\"\n[training]\nglobal_batch = 8\n";
  std::ofstream(directory / "curve.toml") << scenario;
  std::ofstream(directory / "scalar.toml") << scenario << "[compute]\nmemory_efficiency = 0.7\n";
  EXPECT_DOUBLE_EQ(scenarios::load_scenario((directory / "curve.toml").string()).efficiency.memory_by_size.at(67108864), 0.25);
  const scenarios::Scenario stated = scenarios::load_scenario((directory / "scalar.toml").string());
  EXPECT_TRUE(stated.efficiency.memory_by_size.empty());
  EXPECT_EQ(stated.efficiency.memory, 0.7);
}

// Overrides that would change the scenario behind the user's back are refused: an inline table
// over one of the scenario's (--set 'cluster={nodes=2}' dropped node = "hgx-h200" and ran H100s),
// text that is not UTF-8 (an internal error in the JSON writer), Zipf weights past a double's
// range. A warning names a file's nominal parameter count kept under another preset (a 405B model
// "fitting" as 7e9 parameters on 8 GPUs) and a capacity factor that drops tokens.
TEST(ScenarioOverrideTest, OverridesThatWouldChangeTheScenarioSilentlyAreRefused) {
  const std::string c1 = kSource + "/scenarios/c1_7b_ddp_8xh100.toml";
  const auto expect_error = [](const std::string& scenario,
                               const std::vector<std::string>& assignments, const std::string& key,
                               const std::string& message) {
    try {
      scenarios::load_scenario(scenario, assignments);
      FAIL() << assignments.back();
    } catch (const scenarios::ScenarioError& error) {
      EXPECT_EQ(error.key(), key) << error.what();
      EXPECT_NE(error.message().find(message), std::string::npos) << error.what();
    }
  };
  expect_error(kDefault, {"cluster={nodes=2}"}, "cluster",
               "would replace the whole [cluster] table");
  // So would a sweep's point, from --sweep or from the file's [sweep] (whose line it names).
  for (const auto& [origin, text] : std::vector<std::pair<std::string, std::string>>{
           {"--sweep cluster={nodes=2}", ""},
           {"x.toml:9:12", "[sweep]\ncluster = [{nodes = 2}]\n"}}) {
    std::string scenario =
        "[cluster]\nnode = \"hgx-h200\"\nnodes = 1\n[model]\npreset = \"tiny-256\"\n"
        "[training]\nglobal_batch = 8\n" +
        text;
    scenarios::ScenarioDocument document =
        scenarios::ScenarioDocument::from_string(scenario, "x.toml");
    if (text.empty()) document.add_sweep_axis("cluster={nodes=2}", "--sweep");
    try {
      document.sweep_axes();
      ADD_FAILURE() << origin;
    } catch (const scenarios::ScenarioError& error) {
      EXPECT_EQ(error.key(), "cluster");
      EXPECT_EQ(std::string(error.what()).rfind(origin, 0), 0u) << error.what();
      EXPECT_NE(error.message().find("would replace the whole [cluster] table"), std::string::npos)
          << error.what();
      // The hint is written as the axis was: on the command line or in the file.
      const std::string hint =
          text.empty() ? "e.g. --sweep cluster.nodes=2" : "e.g. \"cluster.nodes\" = [2] in [sweep]";
      EXPECT_NE(std::string(error.what()).find(hint), std::string::npos) << error.what();
    }
  }
  expect_error(kDefault, {"model.name=\"\xff\""}, "model.name", "not valid UTF-8");
  expect_error(kDefault, {"model.name=\"a\\u001b[31mb\""}, "model.name",
               "without control characters");
  // A float where an integer is asked reads as one ("got 8" read as if 8 were refused).
  expect_error(kDefault, {"training.global_batch=8.0"}, "training.global_batch",
               "expected an integer, got 8.0");
  expect_error(kDefault, {"training.optimizer=\"sgd\"", "training.sgd_momentum=1e29"},
               "training.sgd_momentum", "expected a momentum between 0 and 1");
  // A relation between keys is blamed on the one the user changed.
  expect_error(c1, {"model.heads=8"}, "model.heads",
               "8 attention heads are not divisible by 32 KV heads");
  expect_error(c1, {"model.hidden=1"}, "model.hidden",
               "hidden size 1 is not divisible by 32 heads");
  expect_error(c1, {"training.precision=\"fp8\"", "cluster.gpu.fp8_tflops=0"}, "training.precision",
               "but cluster.gpu.fp8_tflops is 0");
  // A stated compute time too short for any kernel would be split into zero-picosecond ops.
  expect_error(kDefault, {"compute.step_compute_time_s=1e-13"}, "compute.step_compute_time_s",
               "expected at least 1e-06 s, got 1e-13");
  try {
    scenarios::run_scenario(scenarios::load_scenario(c1, {"output.trace_ranks=[0,99]"}));
    ADD_FAILURE() << "rank 99 of 8 was traced";
  } catch (const scenarios::ScenarioError& error) {
    EXPECT_EQ(error.key(), "output.trace_ranks");
    EXPECT_EQ(std::string(error.what()).rfind("--set output.trace_ranks=[0,99]: ", 0), 0u)
        << error.what();
  }
  // Zipf weights of 8 experts under a double's range (2^-1075 is 0): the cap of 1/k broke.
  expect_error(
      kDefault,
      {"model.preset=\"mixtral-8x7b\"", "model.moe.load=\"zipf\"", "model.moe.zipf_exponent=1075"},
      "model.moe.zipf_exponent", "smaller than a double holds (at most 333.3)");
  // A table the scenario does not have yet may be given whole; the chapter's 7e9 still rounds 6.74
  // B.
  EXPECT_EQ(
      scenarios::load_scenario(kDefault, {"stragglers={distribution=\"lognormal\", sigma=0.1}"})
          .stragglers.sigma,
      0.1);
  const scenarios::Scenario other_model =
      scenarios::load_scenario(c1, {"model.preset=\"llama-3.1-405b\""});
  ASSERT_EQ(other_model.warnings.size(), 1u);
  EXPECT_NE(other_model.warnings[0].find(
                "model.parameter_count = 7e+09 is 0.0172 × the 405.85 B parameters"),
            std::string::npos)
      << other_model.warnings[0];
  EXPECT_TRUE(scenarios::load_scenario(c1).warnings.empty());
  // Fused attention on a GPU with no measured curve runs at an assumed 0.50: said, unless set.
  const scenarios::Scenario b200 =
      scenarios::load_scenario(kDefault, {"cluster.node=\"hgx-b200\""});
  ASSERT_EQ(b200.warnings.size(), 1u);
  EXPECT_NE(b200.warnings[0].find("no measured flash2 attention curve for the B200"),
            std::string::npos)
      << b200.warnings[0];
  EXPECT_TRUE(scenarios::load_scenario(
                  kDefault, {"cluster.node=\"hgx-b200\"", "compute.attention_efficiency=0.6"})
                  .warnings.empty());
  // A capacity factor of 0.5 under uniform load keeps half of each expert's 1/8: the warning says
  // so (a factor of 1e-9 had the report at 660 % MFU, blaming an imposed compute time).
  const scenarios::Scenario dropping = scenarios::load_scenario(
      kDefault, {"model.preset=\"mixtral-8x7b\"", "model.moe.capacity_factor=0.5"});
  ASSERT_EQ(dropping.warnings.size(), 1u);
  EXPECT_NE(
      dropping.warnings[0].find("capacity_factor = 0.5 drops 50.0 % of the tokens' expert copies"),
      std::string::npos)
      << dropping.warnings[0];
}

TEST(ScenarioOverrideTest, ABadOverrideNamesTheCommandLine) {
  try {
    scenarios::load_scenario(kDefault, {"ddp.bucket_cap_mbb=50"});
    FAIL();
  } catch (const scenarios::ScenarioError& error) {
    EXPECT_EQ(error.location(), "--set ddp.bucket_cap_mbb=50");
    EXPECT_EQ(error.hint(), "did you mean \"ddp.bucket_cap_mb\"?");
  }
  try {
    scenarios::load_scenario(kDefault, {"cluster.nodes=0"});
    FAIL();
  } catch (const scenarios::ScenarioError& error) {
    EXPECT_EQ(error.location(), "--set cluster.nodes=0");
    EXPECT_EQ(error.key(), "cluster.nodes");
  }
  // Parallel degrees that do not multiply to the GPUs: the one changed on the command line is
  // named (it used to be parallel.tp at a line of the file, whichever degree was set).
  try {
    scenarios::load_scenario(kDefault, {"parallel.cp=3"});
    FAIL();
  } catch (const scenarios::ScenarioError& error) {
    EXPECT_EQ(error.location(), "--set parallel.cp=3");
    EXPECT_EQ(error.key(), "parallel.cp");
  }
  EXPECT_THROW(scenarios::load_scenario(kDefault, {"no-equals-sign"}), scenarios::ScenarioError);
  EXPECT_THROW(scenarios::load_scenario(kDefault, {"cluster.nodes.deeper=1"}), scenarios::ScenarioError);
}

TEST(ScenarioSweepTest, PointsAreTheCartesianProductInRowMajorOrder) {
  scenarios::ScenarioDocument document = scenarios::ScenarioDocument::from_string(R"(
[cluster]
nodes = 1
[model]
preset = "llama-2-7b"
[training]
global_batch = 32
[sweep]
"ddp.bucket_cap_mb" = [10, 50]
"training.micro_batch" = [1, 2, 4]
)", "inline.toml");
  const auto axes = document.sweep_axes();
  ASSERT_EQ(axes.size(), 2u);
  EXPECT_EQ(axes[0].values, (std::vector<std::string>{"10", "50"}));
  const auto points = document.sweep_points();
  ASSERT_EQ(points.size(), 6u);
  const scenarios::Scenario last = points[5].read();
  EXPECT_EQ(last.lowering.ddp.bucket_cap_mb, 50);
  EXPECT_EQ(last.lowering.training.micro_batch, 4);
  EXPECT_EQ(points[1].read().lowering.training.micro_batch, 2);
  EXPECT_TRUE(points[0].read().sweep.empty());
}

// Llama-2-7B on one node, 8 sequences a step, then `tables` (from line 8 of inline.toml).
scenarios::ScenarioDocument small_inline_scenario(const std::string& tables) {
  return scenarios::ScenarioDocument::from_string(
      "\n[cluster]\nnodes = 1\n[model]\npreset = \"llama-2-7b\"\n[training]\nglobal_batch = 8\n" +
          tables,
      "inline.toml");
}

TEST(ScenarioSweepTest, ABadSweepValueNamesItsSweepEntry) {
  const scenarios::ScenarioDocument document =
      small_inline_scenario("[sweep]\n\"ddp.bucket_size_mb\" = [10]\n");
  try {
    document.sweep_points()[0].read();
    FAIL();
  } catch (const scenarios::ScenarioError& error) {
    EXPECT_EQ(error.location(), "inline.toml:9:25 ([sweep] ddp.bucket_size_mb = 10)");
    EXPECT_EQ(error.key(), "ddp.bucket_size_mb");
  }
}

TEST(ScenarioSweepTest, ASweepPointsWarningsNameTheFilesLines) {
  // A sweep point is a copy of the file, and toml++ copies no source positions: its warnings
  // named line 0:0.
  const scenarios::ScenarioDocument document =
      small_inline_scenario("[zero]\nstage = 2\n[sweep]\n\"ddp.bucket_cap_mb\" = [10, 50]\n");
  const std::vector<std::string> warnings = document.sweep_points()[1].read().warnings;
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].rfind("inline.toml:9:9: zero.stage has no effect", 0), 0u) << warnings[0];
}

TEST(CollectiveOverrideTest, AnAlgorithmThatCannotRunOnItsGroupNamesTheKey) {
  // default.toml's DDP all-reduces span two nodes, but a per-kind override also applies to the
  // single-node case: 1 node makes "hier" impossible (the ideal library has it; NCCL does not).
  const std::vector<std::string> set = {"cluster.nodes=1", "training.global_batch=16", "collectives.library=ideal",
                                        "collectives.all_reduce=hier"};
  try {
    scenarios::run_scenario(scenarios::load_scenario(kDefault, set));
    FAIL();
  } catch (const scenarios::ScenarioError& error) {
    EXPECT_EQ(error.location(), "--set collectives.all_reduce=hier");
    EXPECT_EQ(error.key(), "collectives.all_reduce");
    EXPECT_NE(error.message().find("on group dp[0]: algorithm \"hier\" needs a group spread over two or more nodes"),
              std::string::npos)
        << error.what();
  }
  try {  // NCCL, the default library, runs ring, tree, NVLS, NVLSTree and CollNet only
    scenarios::run_scenario(scenarios::load_scenario(kDefault, {"collectives.all_reduce=hd"}));
    FAIL();
  } catch (const scenarios::ScenarioError& error) {
    EXPECT_EQ(error.key(), "collectives.all_reduce");
    EXPECT_NE(error.message().find("NCCL (collectives.library = \"nccl\") has no \"hd\" "
                                   "all_reduce: it runs ring, tree, nvls (on NVLink SHARP nodes), "
                                   "nvls_tree (across them) and collnet (on a SHARP fabric)"),
              std::string::npos)
        << error.what();
    EXPECT_NE(error.hint().find("collectives.library = \"ideal\""), std::string::npos) << error.what();
  }
  EXPECT_THROW(scenarios::load_scenario(kDefault, {"collectives.library=mpi"}), scenarios::ScenarioError);
  EXPECT_THROW(scenarios::load_scenario(kDefault, {"collectives.all_to_all=ring"}), scenarios::ScenarioError);
  EXPECT_THROW(scenarios::load_scenario(kDefault, {"collectives.groups.dp.all_reduce=spiral"}),
               scenarios::ScenarioError);
}

TEST(CollectiveOverrideTest, PerGroupBeatsPerKind) {
  const scenarios::Scenario s = scenarios::load_scenario(
      kDefault, {"collectives.library=ideal", "collectives.all_reduce=ring", "collectives.groups.dp.all_reduce=hier"});
  const auto result = scenarios::run_scenario(s);
  for (const auto& span : result.simulation.timeline.spans) {
    if (span.category == trace::Category::kAllReduce) {
      EXPECT_EQ(result.simulation.timeline.strings.at(span.algorithm), "hier");
    }
  }
  // Every all-reduce of this DDP run is over the dp groups, so the per-kind ring is never used,
  // nor is an algorithm for tp groups of one rank; the report says so.
  const std::vector<std::string> expected = {
      "--set collectives.all_reduce=ring: collectives.all_reduce is never used: no all_reduce of "
      "two or more ranks runs"};
  EXPECT_EQ(result.report.warnings, expected);
  const auto with_tp = scenarios::run_scenario(
      scenarios::load_scenario(kDefault, {"collectives.groups.tp.all_reduce=ring"}));
  ASSERT_EQ(with_tp.report.warnings.size(), 1u);
  EXPECT_NE(with_tp.report.warnings[0].find(
                "collectives.groups.tp.all_reduce is never used: no all_reduce of two or "
                "more ranks runs over the tp groups"),
            std::string::npos)
      << with_tp.report.warnings[0];
}

TEST(EditDistanceTest, SuggestionsAreCloseMatchesOnly) {
  EXPECT_EQ(scenarios::edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(scenarios::closest_match("bucket_cap_mbb", {"bucket_cap_mb", "no_sync"}), "bucket_cap_mb");
  EXPECT_EQ(scenarios::closest_match("zzzzzz", {"bucket_cap_mb", "no_sync"}), "");
  // A word held whole beats a nearer one by edits ("b200" is 2 edits from "h100"); case is
  // ignored.
  EXPECT_EQ(scenarios::closest_match("h100", {"a100-sxm4-80gb", "h100-sxm5", "h100-pcie", "b200"}),
            "h100-sxm5");
  EXPECT_EQ(scenarios::closest_match("HGX-H100", {"dgx-a100", "hgx-h100"}), "hgx-h100");
  EXPECT_EQ(scenarios::closest_match("Bucket_Cap_MBB", {"bucket_cap_mb", "no_sync"}),
            "bucket_cap_mb");
}

// A slow factor below 1 makes its ranks faster, and the report says so.
TEST(StragglerTest, ASlowFactorBelowOneIsReportedAsFaster) {
  const auto warnings = [](const std::string& factor) {
    return scenarios::run_scenario(
               scenarios::load_scenario(
                   kDefault, {"stragglers.slow_ranks=[1]", "stragglers.slow_factor=" + factor}))
        .report.warnings;
  };
  const auto has = [](const std::vector<std::string>& lines, const std::string& text) {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& line) {
      return line.find(text) != std::string::npos;
    });
  };
  EXPECT_TRUE(
      has(warnings("0.5"), "rank 1 computes 2× faster (stragglers.slow_ranks, slow_factor 0.5)"));
  EXPECT_TRUE(
      has(warnings("1.3"), "rank 1 computes 1.3× slower (stragglers.slow_ranks, slow_factor 1.3)"));
}

}  // namespace

namespace {

// Hostile TOML is refused before toml++ reads it: a key of ~50,000 dotted parts overflowed its
// stack (the CLI and the viewer crashed), a 20 MB value took seconds before its error, and a
// dotted --set key cost memory quadratic in its length (a 120 KB key: 10.6 GB).
std::string error_of(const std::function<void()>& load) {
  try {
    load();
  } catch (const scenarios::ScenarioError& error) {
    const std::string what = error.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    return what;
  }
  ADD_FAILURE() << "accepted";
  return "";
}

std::string repeated(const std::string& text, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += text;
  return out;
}

TEST(TextLimitsTest, DeepKeysHugeStringsAndLongOverridesGetOneMessage) {
  const auto from_text = [](const std::string& text) {
    return error_of([&] { scenarios::ScenarioDocument::from_string(text, "x.toml").read(); });
  };
  EXPECT_EQ(from_text("a" + repeated(".a", 50000) + " = 1\n"),
            "x.toml:1:65: a dotted key of more than 32 parts (see \"Limits\" in docs/scenario.md)");
  EXPECT_EQ(from_text("\n[" + repeated("a.", 50000) + "a]\n").rfind("x.toml:2:66: a dotted key of more than 32 parts", 0), 0u);
  EXPECT_EQ(from_text("[x]\ny = {" + repeated("\"b\" . ", 40) + "c = 1}\n").rfind("x.toml:2:", 0), 0u);
  EXPECT_EQ(from_text("[network]\nmodel = \"" + std::string(20'000'000, 'x') + "\"\n"),
            "x.toml:2:9: a string of 20000000 bytes; at most 65536 are read (see \"Limits\" in docs/scenario.md)");
  EXPECT_EQ(from_text("a = '''\n\n" + std::string(70'000, '.') + "'''").rfind("x.toml:1:5: a string of 70002 bytes", 0), 0u);

  EXPECT_NE(error_of([] { scenarios::load_scenario(kDefault, {"a" + repeated(".a", 20000) + "=1"}); })
                .find("a dotted key of more than 32 parts"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              scenarios::load_scenario(kDefault, {"cluster.nodes=" + std::string(5000, '9')});
            }).find("cluster.nodes: expected an integer, got one of 5000 digits"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              scenarios::load_scenario(kDefault, {"cluster.nodes=\"2\""});
            }).find("expected an integer, got \"2\""),
            std::string::npos);
  EXPECT_NE(error_of([] { scenarios::load_scenario(kDefault, {"network.model=" + std::string(1'000'000, 'x')}); })
                .find("a value of 1000000 bytes; at most 65536 are read"),
            std::string::npos);
  const std::string in_value =
      error_of([] { scenarios::load_scenario(kDefault, {"network.model=[" + repeated("x.", 40) + "x]"}); });
  EXPECT_EQ(in_value.rfind("--set network.model=[x.x.", 0), 0u) << in_value;  // the --set, not a column of dtsim's text
  EXPECT_NE(in_value.find("a dotted key of more than 32 parts"), std::string::npos) << in_value;
  // 31 parts of 4,000 characters: created once each, the first table located at the --set.
  const std::string long_key = repeated(std::string(4000, 'k') + ".", 30) + "k";
  const std::string unknown = error_of([&] { scenarios::load_scenario(kDefault, {long_key + "=1"}); });
  EXPECT_EQ(unknown.rfind("--set kkkk", 0), 0u) << unknown.substr(0, 300);
  EXPECT_NE(unknown.find("unknown key"), std::string::npos) << unknown.substr(0, 300);
  EXPECT_LT(unknown.size(), 1000u);
}

// What the limits must not refuse: dots in strings and comments, floats, dates, arrays of many
// floats, a sweep over a quoted dotted key, 32-part keys.
TEST(TextLimitsTest, DotsInValuesStringsAndCommentsAreNotKeyParts) {
  const std::string floats = "[" + repeated("1.5, ", 2000) + "2.5]";
  std::string text = "[scenario]\ndescription = \"" + repeated("a.", 1000) + "\"  # " + repeated("b.", 1000) + "\n";
  text += "name = '''\n" + repeated("c.", 10) + "'''\n";
  text += "[model]\npreset = \"tiny-256\"\n[cluster]\nnodes = 1\n[training]\nglobal_batch = 8\n";
  text += "[sweep]\n\"ddp.bucket_cap_mb\" = " + floats + "\n";
  EXPECT_NO_THROW(scenarios::ScenarioDocument::from_string(text, "x.toml").sweep_axes());
  EXPECT_NO_THROW(scenarios::ScenarioDocument::from_string(
      "when = 1979-05-27T07:32:00.999Z\n" + repeated("k.", 31) + "k = 1\n", "x.toml"));
  // Up to two quotes before a closing triple are the string's; what follows is read as TOML.
  const std::string quotes = R"(a = """x""""  # """")" "\n" R"(b = 'y' # ''')" "\n";
  EXPECT_NO_THROW(scenarios::ScenarioDocument::from_string(quotes + repeated("k.", 31) + "k = 1\n", "x.toml"));
  EXPECT_EQ(error_of([&] { scenarios::ScenarioDocument::from_string(quotes + repeated("k.", 40) + "k = 1\n", "x.toml"); })
                .rfind("x.toml:3:", 0),
            0u);
}

}  // namespace
