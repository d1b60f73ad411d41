// `dtsim collective`: nccl-tests for the simulator. One collective on ranks 0..N−1 of a preset
// (or scenario) cluster — or `sendrecv`, as nccl-tests' sendrecv_perf: every rank sending to the
// next and receiving from the previous at once, in one communicator of the N ranks — over a
// range of sizes, through one network model; prints size,
// element count, time, algorithm bandwidth (bytes / time) and bus bandwidth (algbw × the
// nccl-tests factor, collectives::bus_bandwidth_factor — the function the real backend uses
// too). Several algorithms side by side show where one overtakes another. With a log of a real
// nccl-tests run (`compare`), the sizes are the log's and each row sets dtsim's time beside the
// run's in-place time, with the error and its median and largest over the log.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "scenarios/scenario.h"

namespace scenarios {

struct CollectiveBenchOptions {
  std::string op = "all_reduce";
  std::string algorithms = "auto";  // one name, or several separated by commas
  std::int32_t ranks = 8;
  std::optional<std::int32_t> nodes;  // every GPU of this many nodes, in place of `ranks`
  std::string sizes = "8:8G";       // MIN:MAX in bytes, K/M/G suffixes (powers of 1024)
  std::string min_bytes, max_bytes; // nccl-tests' -b / -e: in place of MIN / MAX when set
  double factor = 2;                // size multiplier between rows
  std::string topology = "hgx-h100";
  std::string fabric = "ib-ndr";
  bool sharp = false;               // the fabric reduces in the network (collnet)
  std::string scenario;             // take the cluster from this scenario instead
  std::string model = "flow";
  std::string channels = "auto";
  std::string library = "nccl";     // collectives.library: nccl or ideal
  std::string compare;              // an nccl-tests log: its sizes, and its times beside dtsim's
};

struct CollectiveBenchRow {
  std::int64_t bytes = 0;
  std::vector<double> seconds;            // per algorithm asked for
  std::vector<std::string> chosen;        // the algorithm (and NCCL protocol) that ran; differs for "auto"
  std::optional<double> measured_seconds;  // the compared log's in-place time at this size
};

struct CollectiveBenchResult {
  std::string title;
  std::vector<std::string> algorithms;
  std::optional<program::CollectiveKind> kind;  // empty: sendrecv
  std::int32_t ranks = 0;
  std::vector<CollectiveBenchRow> rows;
};
// The op as --op and nccl-tests name it, and nccl-tests' factor from its algorithm bandwidth to
// its bus bandwidth (collectives::bus_bandwidth_factor; 1 for sendrecv).
std::string op_name(const CollectiveBenchResult& result);
double bus_bandwidth_factor(const CollectiveBenchResult& result);

// Throws ScenarioError (naming the option) for bad options or an algorithm that cannot run.
CollectiveBenchResult run_collective_bench(const CollectiveBenchOptions& options);
std::string format_collective_bench(const CollectiveBenchResult& result);
// The same rows as JSON: per size and algorithm, the time, algbw and busbw (GB/s) and what ran.
std::string collective_bench_json(const CollectiveBenchResult& result);
// "1K", "4M", … → bytes. Throws std::invalid_argument.
std::int64_t parse_size(const std::string& text);

}  // namespace scenarios
