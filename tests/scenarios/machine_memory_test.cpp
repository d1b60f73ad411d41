// available_memory_bytes on written /proc/meminfo and cgroup files: the smaller of
// MemAvailable and the cgroup's limit minus its usage (less inactive page cache), for cgroup
// v2 and v1; "max" or a missing file is no limit, and nothing readable is unknown.
#include "scenarios/machine_memory.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/temporary_directory.h"

namespace {

class MachineMemoryTest : public testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(scratch_ / "cgroup");
    write("meminfo", "MemTotal:       24000000 kB\nMemFree:         1000000 kB\nMemAvailable:   20000000 kB\n");
  }
  void write(const std::string& name, const std::string& text) { std::ofstream(scratch_ / name) << text; }
  std::optional<std::uint64_t> available() const {
    return scenarios::available_memory_bytes(scratch_ / "meminfo", scratch_ / "cgroup");
  }
  test_support::TemporaryDirectory scratch_{"dtsim-memory"};
};

TEST_F(MachineMemoryTest, WithoutACgroupLimitItIsMemAvailable) {
  EXPECT_EQ(available(), 20'000'000ull * 1024);
  write("cgroup/memory.max", "max\n");
  write("cgroup/memory.current", "123456\n");
  EXPECT_EQ(available(), 20'000'000ull * 1024);
}

TEST_F(MachineMemoryTest, ATighterCgroupV2LimitWinsAndInactiveCacheCountsAsFree) {
  write("cgroup/memory.max", "8000000000\n");
  write("cgroup/memory.current", "3000000000\n");
  EXPECT_EQ(available(), 5'000'000'000ull);
  write("cgroup/memory.stat", "anon 1000000000\ninactive_file 1000000000\nactive_file 500\n");
  EXPECT_EQ(available(), 6'000'000'000ull);
  write("cgroup/memory.current", "9000000000\n");  // over its limit even without the cache
  EXPECT_EQ(available(), 0ull);                      // known: nothing left
}

TEST_F(MachineMemoryTest, CgroupV1FilesAreReadToo) {
  write("cgroup/memory.limit_in_bytes", "4000000000\n");
  write("cgroup/memory.usage_in_bytes", "1000000000\n");
  write("cgroup/memory.stat", "cache 5\ntotal_inactive_file 500000000\n");
  EXPECT_EQ(available(), 3'500'000'000ull);
}

TEST_F(MachineMemoryTest, NothingReadableIsUnknown) {
  std::filesystem::remove(scratch_ / "meminfo");
  EXPECT_FALSE(available().has_value());
}

}  // namespace
