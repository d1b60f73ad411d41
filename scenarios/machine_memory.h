// How much memory this process may still take on this machine, for refusing a run up front
// that would not fit (sim::SimulationOptions::memory_available_bytes).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

namespace scenarios {

// The smaller of the kernel's MemAvailable (/proc/meminfo) and what the process's memory cgroup
// still allows: its limit minus its usage, not counting inactive page cache the kernel would
// reclaim (v2: memory.max, memory.current, memory.stat's inactive_file; v1:
// memory.limit_in_bytes, memory.usage_in_bytes, total_inactive_file). Limits of parent cgroups
// are not read. Nothing when neither can be read.
std::optional<std::uint64_t> available_memory_bytes();

// The same from given files (for tests): a meminfo file and a cgroup directory of either
// version (its files may be missing, or the limit "max": no limit).
std::optional<std::uint64_t> available_memory_bytes(const std::filesystem::path& meminfo,
                                                    const std::filesystem::path& cgroup);

}  // namespace scenarios
