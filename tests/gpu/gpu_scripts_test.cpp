// The scripts that run dtsim's GPU checks on a lent GPU machine (tests/gpu/), checked where they
// are written: without a GPU, run_gpu_checks.sh still saves its archive and prints its table
// saying why nothing GPU-side ran; the bundle's env.sh finds the GPU libraries of Python wheels
// in both layouts; dtsim needs no CUDA runtime library at run time.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/real_runs.h"
#include "tests/support/temporary_directory.h"

namespace {

namespace fs = std::filesystem;
using test_support::CommandResult;
using test_support::run;
const std::string kSource = test_support::source_dir();

bool gpu_visible() { return run(test_support::dtsim() + " info").output.find("\nGPU 0:") != std::string::npos; }

TEST(GpuChecksScriptTest, WithoutAGpuItSavesTheArchiveAndEndsWithATableSayingWhy) {
  if (gpu_visible()) GTEST_SKIP() << "a GPU is visible: this checks machines without one";
  const test_support::TemporaryDirectory scratch("dtsim-gpu-checks");
  const fs::path work = scratch / "work", out = scratch / "out";
  fs::create_directories(out);
  const fs::path build = fs::path(test_support::dtsim()).parent_path().parent_path();
  const CommandResult checks = run("DTSIM_SKIP_BUILD=1 DTSIM_BUILD_DIR=" + build.string() + " DTSIM_CHECKS_OUT=" +
                                   work.string() + " OUT=" + out.string() + " bash " + kSource +
                                   "/tests/gpu/run_gpu_checks.sh");
  EXPECT_EQ(checks.code, 1) << checks.output;
  // The console's end alone tells what happened: the table, last.
  const std::string tail = checks.output.substr(checks.output.rfind("step "));
  EXPECT_NE(tail.find("facts"), std::string::npos) << tail;
  EXPECT_NE(tail.find("libraries"), std::string::npos) << tail;
  EXPECT_NE(tail.find("one-gpu                    -       -  skipped: dtsim sees no GPU"), std::string::npos) << tail;
  EXPECT_NE(tail.find("gtests                     -       -  skipped"), std::string::npos) << tail;
  EXPECT_NE(checks.output.find("ldd (Debian GLIBC"), std::string::npos) << checks.output;
  // What comes back from a device machine: two files in $OUT, every log in the archive.
  EXPECT_TRUE(fs::exists(out / "summary.txt"));
  ASSERT_TRUE(fs::exists(out / "gpu-checks.tar.gz"));
  const CommandResult listing = run("tar tzf " + (out / "gpu-checks.tar.gz").string());
  EXPECT_EQ(listing.code, 0);
  for (const char* file : {"work/facts.log", "work/libraries.log", "work/summary.txt", "work/table.txt"}) {
    EXPECT_NE(listing.output.find(file), std::string::npos) << file << " not in:\n" << listing.output;
  }
}

// A PyTorch image keeps CUDA 12 wheels' libraries in site-packages/nvidia/<package>/lib and
// CUDA 13 wheels' in site-packages/nvidia/cu13/lib: env.sh puts every such folder on
// LD_LIBRARY_PATH, after the bundle's own. (A stand-in python3 gives the fake site-packages as
// its sys.path.)
TEST(DeviceBundleTest, EnvFindsTheGpuLibrariesOfPythonWheelsInBothLayouts) {
  const test_support::TemporaryDirectory scratch("dtsim-bundle-env");
  const fs::path site = scratch / "site-packages", bundle = scratch / "bundle", bin = scratch / "bin";
  for (const char* folder : {"nvidia/cu13/lib", "nvidia/nccl/lib", "nvidia/cublas/lib", "nvidia/cu13/nvvm/lib", "nvidia/nolib/include"}) {
    fs::create_directories(site / folder);
  }
  fs::create_directories(bundle);
  fs::create_directories(bin);
  fs::copy_file(kSource + "/tests/gpu/bundle_env.sh", bundle / "env.sh");
  std::ofstream(bin / "python3") << "#!/bin/sh\necho /nonexistent\necho " << site.string() << "\n";
  fs::permissions(bin / "python3", fs::perms::owner_all);
  const CommandResult sourced = run("env -i PATH=" + bin.string() + ":/usr/bin:/bin bash -c 'source " +
                                    (bundle / "env.sh").string() + " && echo \"$LD_LIBRARY_PATH\" && echo \"$DTSIM_PATH\"'");
  ASSERT_EQ(sourced.code, 0) << sourced.output;
  const std::string path = sourced.output.substr(0, sourced.output.find('\n'));
  for (const char* folder : {"nvidia/cu13/lib", "nvidia/nccl/lib", "nvidia/cublas/lib", "nvidia/cu13/nvvm/lib"}) {
    EXPECT_NE(path.find((site / folder).string()), std::string::npos) << folder << " not in " << path;
  }
  EXPECT_EQ(path.find("nolib"), std::string::npos) << path;
  EXPECT_EQ(path.find((bundle / "usr/lib/x86_64-linux-gnu").string()), 0u) << "the bundle's libraries first: " << path;
  EXPECT_NE(sourced.output.find((bundle / "bin/dtsim").string()), std::string::npos) << sourced.output;
}

// The CUDA runtime is linked into dtsim: a GPU machine needs only the driver, NCCL and cuBLAS.
TEST(DeviceBundleTest, DtsimNeedsNoCudaRuntimeLibrary) {
  if (run(test_support::dtsim() + " info").output.find("CUDA:  not built") != std::string::npos) {
    GTEST_SKIP() << "built without CUDA";
  }
  const CommandResult libraries = run("ldd " + test_support::dtsim());
  ASSERT_EQ(libraries.code, 0) << libraries.output;
  EXPECT_EQ(libraries.output.find("libcudart"), std::string::npos) << libraries.output;
  EXPECT_NE(libraries.output.find("libnccl"), std::string::npos) << libraries.output;
  EXPECT_NE(run(test_support::dtsim() + " info").output.find("CUDA runtime  linked into dtsim (static)"), std::string::npos);
}

}  // namespace
