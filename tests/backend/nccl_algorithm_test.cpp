// NCCL_ALGO from a scenario's fixed collective algorithms (backend/nccl_algorithm.h): the
// setting NCCL needs, or one refusal naming the op and what to do, for the scaled-down
// scenarios with [collectives] keys set as a user would.
#include <gtest/gtest.h>

#include "backend/executor.h"
#include "backend/nccl_algorithm.h"
#include "scenarios/run_scenario.h"
#include "scenarios/scenario_loader.h"
#include "strategies/lowering.h"

namespace {

// The NCCL_ALGO setting for the scenario with `assignments` applied.
std::optional<std::string> setting_for(const std::string& scenario_name, const std::vector<std::string>& assignments) {
  scenarios::ScenarioDocument document =
      scenarios::ScenarioDocument::from_file(std::string(DTSIM_SOURCE_DIR) + "/scenarios/real/" + scenario_name + ".toml");
  for (const std::string& assignment : assignments) document.set(assignment, "test");
  const scenarios::Scenario scenario = document.read();
  const program::Program program = strategies::lower(scenario.lowering);
  return backend::nccl_algo_setting(program, scenarios::fixed_algorithms(scenario));
}

std::string refusal_for(const std::string& scenario_name, const std::vector<std::string>& assignments) {
  try {
    setting_for(scenario_name, assignments);
  } catch (const backend::ExecutionError& error) {
    return error.what();
  }
  return "(accepted)";
}

// tp = 2 and dp = 2 on four ranks: all-reduces in two group families.
const std::vector<std::string> kTpAndDp = {"cluster.gpus_per_node=4", "training.global_batch=4"};

TEST(NcclAlgorithmTest, NothingFixedLeavesNcclToChoose) {
  EXPECT_EQ(setting_for("tiny_ddp_2ranks", {}), std::nullopt);
}

TEST(NcclAlgorithmTest, FixedRingAndTreeBecomePerFunctionSettings) {
  EXPECT_EQ(setting_for("tiny_ddp_2ranks", {"collectives.all_reduce=ring"}), "allreduce:ring");
  EXPECT_EQ(setting_for("tiny_ddp_2ranks", {"collectives.all_reduce=tree"}), "allreduce:tree");
  EXPECT_EQ(setting_for("tiny_ddp_2ranks", {"parallel.strategy=fsdp", "collectives.all_gather=ring",
                                            "collectives.reduce_scatter=ring"}),
            "allgather:ring;reducescatter:ring");
  auto with = kTpAndDp;
  with.push_back("collectives.all_reduce=tree");
  EXPECT_EQ(setting_for("tiny_tp_2ranks", with), "allreduce:tree");
}

TEST(NcclAlgorithmTest, AlgorithmsNcclLacksAreRefusedNamingTheOpAndTheWayOut) {
  const std::string hd = refusal_for("tiny_ddp_2ranks", {"collectives.all_reduce=hd"});
  EXPECT_NE(hd.find("op 'ddp.bucket0.all_reduce'"), std::string::npos) << hd;
  EXPECT_NE(hd.find("NCCL has no hd algorithm"), std::string::npos) << hd;
  EXPECT_NE(hd.find("--backend mpi and [backend] collectives = \"dtsim\""), std::string::npos) << hd;

  const std::string hier = refusal_for("tiny_ddp_2ranks", {"parallel.strategy=fsdp", "collectives.all_gather=hier"});
  EXPECT_NE(hier.find("fixes hier for all_gather, but NCCL has no hier algorithm: choose ring for"), std::string::npos)
      << hier;
}

TEST(NcclAlgorithmTest, TwoAlgorithmsForOneFunctionAreRefused) {
  auto with = kTpAndDp;
  with.push_back("collectives.groups.tp.all_reduce=ring");
  with.push_back("collectives.groups.dp.all_reduce=tree");
  const std::string both = refusal_for("tiny_tp_2ranks", with);
  EXPECT_NE(both.find("NCCL takes one algorithm per collective function and process"), std::string::npos) << both;
}

}  // namespace
