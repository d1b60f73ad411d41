// How much memory this process may still take on this machine, for refusing a run up front
// that would not fit (sim::SimulationOptions::memory_available_bytes).
#pragma once

#include <cstdint>
#include <filesystem>

namespace scenarios {

// The smaller of the kernel's MemAvailable (/proc/meminfo) and what the process's memory cgroup
// still allows (v2: memory.max − memory.current; v1: memory.limit_in_bytes −
// memory.usage_in_bytes). 0 when neither can be read.
std::uint64_t available_memory_bytes();

// The same from given files (for tests): a meminfo file, and a cgroup's limit and usage files
// (either may be missing, or hold "max": no limit).
std::uint64_t available_memory_bytes(const std::filesystem::path& meminfo, const std::filesystem::path& cgroup_limit,
                                     const std::filesystem::path& cgroup_usage);

}  // namespace scenarios
