// Reads the memory left to this process from /proc and the cgroup file system (see machine_memory.h).
#include "scenarios/machine_memory.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

namespace scenarios {
namespace {

// "MemAvailable:   12345678 kB" → bytes.
std::optional<std::uint64_t> meminfo_available(const std::filesystem::path& meminfo) {
  std::ifstream file(meminfo);
  for (std::string line; std::getline(file, line);) {
    std::istringstream fields(line);
    std::string key;
    std::uint64_t kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") return kib * 1024;
  }
  return std::nullopt;
}

// A cgroup memory file: a byte count, or "max" (no limit) or missing → nullopt.
std::optional<std::uint64_t> cgroup_value(const std::filesystem::path& file_path) {
  std::ifstream file(file_path);
  std::uint64_t value = 0;
  if (file >> value) return value;
  return std::nullopt;
}

// This process's memory cgroup: its limit and usage files (v2 if mounted, else v1), from
// /proc/self/cgroup ("0::/path" for v2, "4:memory:/path" for v1). A path the container does not
// show falls back to the mount's root.
std::pair<std::filesystem::path, std::filesystem::path> own_cgroup_files() {
  const std::filesystem::path root = "/sys/fs/cgroup";
  std::ifstream file("/proc/self/cgroup");
  for (std::string line; std::getline(file, line);) {
    const auto first = line.find(':');
    const auto second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1).erase(0, 1);  // without the leading '/'
    if (controllers.empty() && std::filesystem::exists(root / "memory.max")) {
      const auto dir = std::filesystem::exists(root / path / "memory.max") ? root / path : root;
      return {dir / "memory.max", dir / "memory.current"};
    }
    if (controllers == "memory") {
      const auto mount = root / "memory";
      const auto dir = std::filesystem::exists(mount / path / "memory.limit_in_bytes") ? mount / path : mount;
      return {dir / "memory.limit_in_bytes", dir / "memory.usage_in_bytes"};
    }
  }
  return {};
}

}  // namespace

std::uint64_t available_memory_bytes(const std::filesystem::path& meminfo, const std::filesystem::path& cgroup_limit,
                                     const std::filesystem::path& cgroup_usage) {
  std::optional<std::uint64_t> available = meminfo_available(meminfo);
  const auto limit = cgroup_value(cgroup_limit);
  const auto used = cgroup_value(cgroup_usage);
  if (limit && used) {
    const std::uint64_t left = *limit > *used ? *limit - *used : 0;
    available = available ? std::min(*available, left) : left;
  }
  return available.value_or(0);
}

std::uint64_t available_memory_bytes() {
  const auto [limit, usage] = own_cgroup_files();
  return available_memory_bytes("/proc/meminfo", limit, usage);
}

}  // namespace scenarios
