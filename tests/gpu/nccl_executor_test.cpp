// The GPU executor (`dtsim run --backend nccl`) end to end. Labelled "gpu": each test that
// needs GPUs skips, saying so, where `dtsim info` lists fewer than it needs; without any GPU
// the one test that runs checks that a GPU run stops with one clear message. On a GPU machine
// tests/gpu/run_gpu_checks.sh runs them all (and the calibration) and prints a summary.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/real_runs.h"
#include "tests/support/temporary_directory.h"

namespace {

namespace fs = std::filesystem;
using test_support::CommandResult;
using test_support::mpirun;
using test_support::run;
const std::string kSource = test_support::source_dir();

// GPUs `dtsim info` lists ("GPU 0: NVIDIA H200, 150.0 GB" lines).
int visible_gpus() {
  const CommandResult info = run(test_support::dtsim() + " info");
  int count = 0;
  for (std::size_t at = info.output.find("\nGPU "); at != std::string::npos; at = info.output.find("\nGPU ", at + 1)) ++count;
  return count;
}

#define SKIP_WITHOUT_GPUS(needed)                                                                        \
  if (const int gpus = visible_gpus(); gpus < (needed)) {                                                \
    GTEST_SKIP() << "needs " << (needed) << " GPU(s), " << gpus << " visible: run tests/gpu/run_gpu_checks.sh " \
                 << "on a GPU machine";                                                                  \
  }

// Without a GPU (or without CUDA in the build), a GPU run or calibration stops at once with one
// clear message and writes nothing.
TEST(GpuExecutorTest, WithoutAGpuTheRunStopsWithOneMessageAndWritesNothing) {
  if (visible_gpus() > 0) GTEST_SKIP() << "a GPU is visible: this checks machines without one";
  const bool built_with_cuda = run(test_support::dtsim() + " info").output.find("CUDA:  not built") == std::string::npos;
  // A build with CUDA fails on the rank (exit 3); one without refuses before running (exit 2).
  const int expected_code = built_with_cuda ? 3 : 2;
  const std::string expected = built_with_cuda ? "dtsim: rank 0: no GPU visible" : "built without CUDA and NCCL";
  const test_support::TemporaryDirectory scratch("dtsim-gpu-none");
  const fs::path output = scratch / "out";
  const CommandResult result =
      run(mpirun(1) + " run " + kSource + "/scenarios/real/small_1gpu.toml --backend nccl -o " + output.string());
  EXPECT_EQ(result.code, expected_code) << result.output;
  EXPECT_NE(result.output.find(expected), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("--backend mpi"), std::string::npos) << result.output;
  EXPECT_FALSE(fs::exists(output));

  const fs::path profile = scratch / "profile.toml";
  const CommandResult calibration = run(mpirun(1) + " calibrate --backend nccl -o " + profile.string());
  EXPECT_EQ(calibration.code, expected_code) << calibration.output;
  EXPECT_NE(calibration.output.find(expected), std::string::npos) << calibration.output;
  EXPECT_FALSE(fs::exists(profile));
}

// One GPU: the calibration measures cuBLAS bf16 GEMMs by size and the memory pass, and writes
// a profile the simulator reads.
TEST(GpuCalibrationTest, OneGpuCalibratesComputeIntoAProfileScenariosRead) {
  SKIP_WITHOUT_GPUS(1);
  const test_support::TemporaryDirectory directory("dtsim-gpu-calibration");
  const CommandResult calibration = run(mpirun(1) + " calibrate --backend nccl -o " + (directory / "profile.toml").string());
  ASSERT_EQ(calibration.code, 0) << calibration.output;
  std::fputs(calibration.output.c_str(), stdout);
  EXPECT_NE(calibration.output.find("bf16_tflops = "), std::string::npos);
  EXPECT_NE(calibration.output.find("matmul_efficiency_by_size = [["), std::string::npos);
  std::ofstream(directory / "scenario.toml") << "[scenario]\nhardware_profile = \"profile.toml\"\n"
                                             << "name = \"calibrated\"\n[cluster]\nnodes = 1\ngpus_per_node = 1\n"
                                             << "[model]\npreset = \"small-2048\"\n";
  const CommandResult simulated = run(test_support::dtsim() + " run " + (directory / "scenario.toml").string() + " -o " +
                                      (directory / "sim").string());
  EXPECT_EQ(simulated.code, 0) << simulated.output;
}

// One GPU: every op of a bf16 step runs once, in dependency order, on its stream; the one-rank
// NCCL calls' results are checked; the measured step is compared with the simulated one on
// the GPU's own preset (printed, not bounded: the bound comes with a calibrated profile).
TEST(GpuExecutorTest, OneGpuRunsEveryOpOnceInDependencyOrderAndVerifies) {
  SKIP_WITHOUT_GPUS(1);
  const test_support::TemporaryDirectory directory("dtsim-gpu-one");
  const std::string scenario = kSource + "/scenarios/real/small_1gpu.toml";
  const std::string node = std::getenv("DTSIM_GPU_NODE") != nullptr ? std::getenv("DTSIM_GPU_NODE") : "hgx-h100";
  const CommandResult real = run(mpirun(1) + " run " + scenario + " --set cluster.node=" + node +
                                 " --backend nccl --timeout 20 --verify -o " + (directory / "real").string());
  ASSERT_EQ(real.code, 0) << real.output;
  EXPECT_NE(real.output.find("measured: NCCL"), std::string::npos) << real.output;
  EXPECT_NE(real.output.find("verified: "), std::string::npos) << real.output;
  const CommandResult simulated = run(test_support::dtsim() + " run " + scenario + " --set cluster.node=" + node +
                                      " -o " + (directory / "sim").string());
  ASSERT_EQ(simulated.code, 0) << simulated.output;
  test_support::expect_same_ops_in_dependency_order(directory / "real" / "timeline.json", directory / "sim" / "timeline.json");
  test_support::compare_and_print("small_1gpu on " + node, directory / "sim" / "timeline.json",
                                  directory / "real" / "timeline.json");
}

// Two ranks: the scaled-down DDP and TP steps with NCCL collectives, verified element by element
// (and the TP forward against the unsharded one), then a hang caught by the watchdog. `flags`
// are added to every run (--share-gpu: both ranks on one GPU).
void run_two_rank_steps_and_a_hang(const std::string& flags) {
  const test_support::TemporaryDirectory scratch("dtsim-gpu-two");
  for (const std::string name : {"tiny_ddp_2ranks", "tiny_tp_2ranks"}) {
    const fs::path directory = scratch / name;
    const std::string scenario = kSource + "/scenarios/real/" + name + ".toml";
    const CommandResult real =
        run(mpirun(2) + " run " + scenario + " --backend nccl --timeout 20 " + flags + " --verify -o " + (directory / "real").string());
    ASSERT_EQ(real.code, 0) << name << "\n" << real.output;
    EXPECT_NE(real.output.find("collective and transfer results checked element by element"), std::string::npos) << real.output;
    ASSERT_EQ(run(test_support::dtsim() + " run " + scenario + " -o " + (directory / "sim").string()).code, 0);
    test_support::expect_same_ops_in_dependency_order(directory / "real" / "timeline.json", directory / "sim" / "timeline.json");
  }
  const CommandResult hang = run(mpirun(2) + " run " + kSource +
                                 "/scenarios/real/tiny_ddp_2ranks.toml --backend nccl " + flags +
                                 " --timeout 5 --inject-fault hang:1:ddp.bucket0.all_reduce");
  EXPECT_EQ(hang.code, 3) << hang.output;
  // Either rank's watchdog may fire first: the hung rank's, or its peer's.
  EXPECT_NE(hang.output.find("op 'ddp.bucket0.all_reduce' did not finish within 5 s"), std::string::npos) << hang.output;
}

TEST(GpuExecutorTest, TwoGpusRunDataAndTensorParallelStepsAndTheWatchdogFires) {
  SKIP_WITHOUT_GPUS(2);
  run_two_rank_steps_and_a_hang("");
}

// Two ranks with --share-gpu (each rank a host of its own to NCCL, connected over its socket
// transport): on a one-GPU machine both drive that GPU, and NCCL collectives, splits, sends and
// receives and the watchdog run there (with more GPUs each rank still takes its own).
TEST(GpuExecutorTest, TwoRanksWithShareGpuRunDataAndTensorParallelStepsAndTheWatchdogFires) {
  SKIP_WITHOUT_GPUS(1);
  run_two_rank_steps_and_a_hang("--share-gpu");
}

}  // namespace
