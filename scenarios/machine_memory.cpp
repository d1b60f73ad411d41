// Reads the memory left to this process from /proc and the cgroup file system (see machine_memory.h).
#include "scenarios/machine_memory.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

namespace scenarios {
namespace {

// The value of `key` in a file of "key value" lines (meminfo's "MemAvailable: 123 kB",
// memory.stat's "inactive_file 123").
std::optional<std::uint64_t> keyed_value(const std::filesystem::path& file_path, const std::string& key) {
  std::ifstream file(file_path);
  for (std::string line; std::getline(file, line);) {
    std::istringstream fields(line);
    std::string name;
    std::uint64_t value = 0;
    if (fields >> name >> value && name == key) return value;
  }
  return std::nullopt;
}

// A cgroup file holding one byte count; "max" (no limit) or a missing file → nothing.
std::optional<std::uint64_t> single_value(const std::filesystem::path& file_path) {
  std::ifstream file(file_path);
  std::uint64_t value = 0;
  if (file >> value) return value;
  return std::nullopt;
}

// This process's memory cgroup directory, from /proc/self/cgroup: "0::/path" with cgroup v2
// mounted at /sys/fs/cgroup, else the v1 line whose controllers include "memory". A path the
// container does not show falls back to the mount's root.
std::filesystem::path own_memory_cgroup() {
  const std::filesystem::path root = "/sys/fs/cgroup";
  std::ifstream file("/proc/self/cgroup");
  for (std::string line; std::getline(file, line);) {
    const auto first = line.find(':');
    const auto second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = "," + line.substr(first + 1, second - first - 1) + ",";
    const std::string path = line.substr(second + 1).erase(0, 1);  // without the leading '/'
    std::filesystem::path mount;
    if (controllers == ",," && std::filesystem::exists(root / "cgroup.controllers")) {
      mount = root;
    } else if (controllers.find(",memory,") != std::string::npos) {
      mount = root / "memory";
    } else {
      continue;
    }
    return std::filesystem::exists(mount / path) ? mount / path : mount;
  }
  return {};
}

}  // namespace

std::optional<std::uint64_t> available_memory_bytes(const std::filesystem::path& meminfo,
                                                    const std::filesystem::path& cgroup) {
  std::optional<std::uint64_t> available;
  if (const auto kib = keyed_value(meminfo, "MemAvailable:")) available = *kib * 1024;
  const bool v2 = std::filesystem::exists(cgroup / "memory.max");
  const auto limit = single_value(cgroup / (v2 ? "memory.max" : "memory.limit_in_bytes"));
  const auto usage = single_value(cgroup / (v2 ? "memory.current" : "memory.usage_in_bytes"));
  if (limit && usage) {
    const std::uint64_t cache = keyed_value(cgroup / "memory.stat", v2 ? "inactive_file" : "total_inactive_file").value_or(0);
    const std::uint64_t used = *usage > cache ? *usage - cache : 0;
    const std::uint64_t left = *limit > used ? *limit - used : 0;
    available = available ? std::min(*available, left) : left;
  }
  return available;
}

std::optional<std::uint64_t> available_memory_bytes() {
  return available_memory_bytes("/proc/meminfo", own_memory_cgroup());
}

}  // namespace scenarios
