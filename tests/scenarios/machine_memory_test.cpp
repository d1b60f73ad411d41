// available_memory_bytes on written /proc/meminfo and cgroup files: the smaller of
// MemAvailable and the cgroup's limit minus its usage; "max" or a missing file is no limit.
#include "scenarios/machine_memory.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace {

class MachineMemoryTest : public testing::Test {
 protected:
  void SetUp() override {
    directory_ = std::filesystem::temp_directory_path() /
                 ("dtsim_machine_memory_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(directory_);
    write("meminfo", "MemTotal:       24000000 kB\nMemFree:         1000000 kB\nMemAvailable:   20000000 kB\n");
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }
  void write(const std::string& name, const std::string& text) { std::ofstream(directory_ / name) << text; }
  std::uint64_t available() const {
    return scenarios::available_memory_bytes(directory_ / "meminfo", directory_ / "limit", directory_ / "usage");
  }
  std::filesystem::path directory_;
};

TEST_F(MachineMemoryTest, WithoutACgroupLimitItIsMemAvailable) {
  EXPECT_EQ(available(), 20'000'000ull * 1024);
  write("limit", "max\n");
  write("usage", "123456\n");
  EXPECT_EQ(available(), 20'000'000ull * 1024);
}

TEST_F(MachineMemoryTest, ATighterCgroupLimitWins) {
  write("limit", "8000000000\n");
  write("usage", "3000000000\n");
  EXPECT_EQ(available(), 5'000'000'000ull);
  write("usage", "9000000000\n");  // over its limit already: nothing left
  EXPECT_EQ(available(), 0ull);
}

TEST_F(MachineMemoryTest, NothingReadableIsUnknown) {
  std::filesystem::remove(directory_ / "meminfo");
  EXPECT_EQ(available(), 0ull);
}

}  // namespace
