// `dtsim collective` (see collective_bench.h).
#include "scenarios/collective_bench.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "scenarios/nccl_tests_log.h"
#include "scenarios/scenario_loader.h"
#include "scenarios/statistics.h"
#include "sim/collectives/schedule.h"
#include "sim/core/engine.h"
#include "sim/net/comm_planner.h"
#include "sim/net/network_model.h"
#include "topology/presets.h"

namespace scenarios {
namespace {

constexpr std::int64_t kMaxBytes = std::int64_t{1} << 40;
constexpr std::int64_t kMaxRows = 10000;

// A barrier moves no data: it has no sizes to sweep, and its bandwidths would read 0 GB/s.
// (An empty kind is a send/recv.)
bool carries_data(std::optional<program::CollectiveKind> kind) {
  return kind != program::CollectiveKind::kBarrier;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  for (std::string part; std::getline(stream, part, separator);) parts.push_back(part);
  return parts;
}

[[noreturn]] void bad(const std::string& option, const std::string& message, const std::string& hint = {}) {
  throw ScenarioError("dtsim collective", option, message, hint);
}

constexpr std::int64_t kFloatBytes = 4;  // the benchmark's data type, as nccl-tests' default: float

constexpr program::CollectiveKind kBenchedKinds[] = {
    program::CollectiveKind::kAllReduce,     program::CollectiveKind::kAllGather,
    program::CollectiveKind::kReduceScatter, program::CollectiveKind::kBroadcast,
    program::CollectiveKind::kReduce,        program::CollectiveKind::kAllToAll,
    program::CollectiveKind::kBarrier};
constexpr const char* kSendRecv = "sendrecv";
constexpr const char* kBenchedOps =
    "all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all, barrier, sendrecv";

std::optional<program::CollectiveKind> kind_named(const std::string& op) {
  for (auto kind : kBenchedKinds) {
    if (program::collective_name(kind) == op) return kind;
  }
  return std::nullopt;
}

// The collective --op names; empty for sendrecv.
std::optional<program::CollectiveKind> parse_kind(const std::string& op) {
  if (op == kSendRecv) return std::nullopt;
  if (const auto kind = kind_named(op)) return *kind;
  bad("--op", fmt::format("unknown collective \"{}\"", op), fmt::format("one of {}", kBenchedOps));
}

topology::ClusterSpec cluster_for(const CollectiveBenchOptions& options) {
  topology::ClusterSpec cluster;
  if (!options.scenario.empty()) {
    cluster = load_scenario(options.scenario).cluster;
  } else {
    const auto node = topology::node_preset(options.topology);
    if (!node) bad("--topology", fmt::format("unknown node preset \"{}\"", options.topology), "see dtsim presets");
    const auto fabric = topology::fabric_preset(options.fabric);
    if (!fabric) bad("--fabric", fmt::format("unknown fabric preset \"{}\"", options.fabric), "see dtsim presets");
    if (topology::leaf_ports_per_node(*node, *fabric) > fabric->leaf_down_ports) {
      bad("--fabric",
          fmt::format("a {} node's {} NICs do not fit on a leaf of {} with {} down ports",
                      options.topology, node->nics, options.fabric, fabric->leaf_down_ports),
          "a rail-optimized fabric such as --fabric ib-ndr-rail, or --scenario with a larger "
          "[cluster.fabric] leaf_down_ports");
    }
    if (options.sharp && fabric->kind != topology::FabricKind::kInfiniBand) {
      bad("--sharp",
          fmt::format("in-network reduction (SHARP) runs on InfiniBand switches, but {} is RoCE",
                      options.fabric),
          "drop --sharp, or choose an InfiniBand fabric such as --fabric ib-ndr");
    }
    cluster.node = *node;
    cluster.fabric = *fabric;
    cluster.fabric.sharp = options.sharp;
    cluster.nodes = (options.ranks + node->gpus - 1) / node->gpus;
  }
  if (options.ranks > cluster.gpu_count() && options.nodes) {
    bad("--nodes",
        fmt::format("{} nodes do not fit the scenario's cluster of {} node{} ({} GPUs)",
                    *options.nodes, cluster.nodes, cluster.nodes == 1 ? "" : "s",
                    cluster.gpu_count()),
        "give the scenario enough nodes (cluster.nodes), or fewer --nodes");
  }
  if (options.ranks > cluster.gpu_count()) {
    bad("--ranks", fmt::format("{} ranks do not fit the cluster's {} GPUs", options.ranks, cluster.gpu_count()));
  }
  return cluster;
}

std::string human_size(std::int64_t bytes) {
  for (const auto& [unit, scale] : {std::pair{"G", 30}, {"M", 20}, {"K", 10}}) {
    if (bytes >= (std::int64_t{1} << scale) && bytes % (std::int64_t{1} << scale) == 0) {
      return fmt::format("{}{}", bytes >> scale, unit);
    }
  }
  return std::to_string(bytes);
}

}  // namespace

std::int64_t parse_size(const std::string& text) {
  if (text.empty()) throw std::invalid_argument("empty size");
  std::size_t used = 0;
  const double value = std::stod(text, &used);
  int shift = 0;
  if (used < text.size()) {
    switch (std::toupper(static_cast<unsigned char>(text[used]))) {
      case 'K': shift = 10; break;
      case 'M': shift = 20; break;
      case 'G': shift = 30; break;
      default: throw std::invalid_argument("unknown unit in " + text);
    }
    if (used + 1 != text.size()) throw std::invalid_argument("trailing text in " + text);
  }
  const double bytes = value * std::pow(2.0, shift);
  if (!(bytes >= 0) || bytes > static_cast<double>(kMaxBytes)) throw std::invalid_argument("size out of range: " + text);
  return static_cast<std::int64_t>(bytes);
}

namespace {

// The options with --nodes turned into ranks and -b / -e into --sizes.
CollectiveBenchOptions resolved(CollectiveBenchOptions options) {
  constexpr std::int32_t kMaxRanks = 65536;
  if (options.nodes) {
    if (*options.nodes < 1 || *options.nodes > kMaxRanks) {
      bad("--nodes",
          fmt::format("expected between 1 and {} nodes, got {}", kMaxRanks, *options.nodes));
    }
    const std::int32_t per_node =
        options.scenario.empty() ? cluster_for(options).node.gpus : load_scenario(options.scenario).cluster.node.gpus;
    const std::int64_t ranks = std::int64_t{*options.nodes} * per_node;
    if (ranks > kMaxRanks) {
      bad("--nodes", fmt::format("{} nodes × {} GPUs = {} ranks, more than {}", *options.nodes,
                                 per_node, ranks, kMaxRanks));
    }
    options.ranks = static_cast<std::int32_t>(ranks);
  }
  if (options.ranks < 1 || options.ranks > kMaxRanks) {
    bad("--ranks", fmt::format("expected between 1 and {} ranks, got {}", kMaxRanks, options.ranks));
  }
  if (!options.min_bytes.empty() || !options.max_bytes.empty()) {
    const auto bounds = split(options.sizes, ':');
    options.sizes = fmt::format("{}:{}", !options.min_bytes.empty() ? options.min_bytes : bounds.front(),
                                !options.max_bytes.empty() ? options.max_bytes : bounds.back());
  }
  return options;
}

// The rows of a sweep from --sizes (or -b / -e) by --factor.
std::vector<CollectiveBenchRow> rows_of_sizes(const CollectiveBenchOptions& options,
                                              const CollectiveBenchOptions& asked) {
  if (!(std::isfinite(options.factor) && options.factor > 1))
    bad("--factor", "expected a finite size factor above 1");
  const auto bounds = split(options.sizes, ':');
  std::int64_t min_bytes = 0, max_bytes = 0;
  try {
    if (bounds.size() != 2) throw std::invalid_argument("expected MIN:MAX");
    min_bytes = parse_size(bounds[0]);
    max_bytes = parse_size(bounds[1]);
  } catch (const std::exception&) {
    bad(asked.min_bytes.empty() && asked.max_bytes.empty() ? "--sizes" : "-b/-e",
        fmt::format("cannot read \"{}\"", options.sizes), "sizes in bytes with K/M/G suffixes, e.g. -b 8 -e 8G or --sizes 1M:1G");
  }
  if (min_bytes < kFloatBytes || max_bytes < min_bytes) {
    bad(asked.min_bytes.empty() && asked.max_bytes.empty() ? "--sizes" : "-b/-e",
        fmt::format("expected {} <= MIN <= MAX: sizes are whole floats, as nccl-tests counts them",
                    kFloatBytes));
  }
  const double rows = std::floor(std::log(static_cast<double>(max_bytes) / static_cast<double>(min_bytes)) /
                                 std::log(options.factor)) + 1;
  if (rows > static_cast<double>(kMaxRows)) {
    bad("--factor", fmt::format("{} to {} bytes by a factor of {} is {:.3g} rows, more than {}", min_bytes, max_bytes,
                                options.factor, rows, kMaxRows),
        "a larger factor, e.g. 2, or a narrower --sizes");
  }
  // Whole floats, as nccl-tests runs them (count = size / 4); a factor near 1 would otherwise
  // repeat a size.
  std::vector<CollectiveBenchRow> sweep;
  for (double bytes = static_cast<double>(min_bytes);
       bytes <= static_cast<double>(max_bytes) * (1 + 1e-9); bytes *= options.factor) {
    const std::int64_t whole_floats = static_cast<std::int64_t>(bytes) / kFloatBytes * kFloatBytes;
    if (sweep.empty() || sweep.back().bytes != whole_floats)
      sweep.emplace_back().bytes = whole_floats;
  }
  return sweep;
}

// The rows of the log --compare names, each with the run's in-place time; the log must be of
// the collective and ranks asked for.
std::vector<CollectiveBenchRow> rows_of_log(const CollectiveBenchOptions& options) {
  const NcclTestsLog log = read_nccl_tests_log(options.compare);
  if (log.ranks != 0 && log.ranks != options.ranks) {
    bad("--compare",
        fmt::format("{} ran on {} ranks; this benchmark has {}", options.compare, log.ranks,
                    options.ranks),
        fmt::format("--ranks {}, or --nodes with as many GPUs", log.ranks));
  }
  if (!log.op.empty() && !kind_named(log.op) && log.op != kSendRecv) {
    bad("--compare",
        fmt::format("{} measured {}, which this benchmark does not run", options.compare, log.op),
        fmt::format("a log of one of {} (nccl-tests' <op>_perf)", kBenchedOps));
  }
  if (!log.op.empty() && log.op != options.op) {
    bad("--compare",
        fmt::format("{} measured {}; this benchmark runs {}", options.compare, log.op, options.op),
        fmt::format("--op {}", log.op));
  }
  if (log.rows.size() > static_cast<std::size_t>(kMaxRows)) {
    bad("--compare",
        fmt::format("{} has {} rows, more than {}", options.compare, log.rows.size(), kMaxRows));
  }
  std::vector<CollectiveBenchRow> rows;
  for (const NcclTestsMeasurement& measured : log.rows) {
    if (measured.bytes > kMaxBytes) {
      bad("--compare", fmt::format("{}:{}: {} bytes, more than {}", options.compare, measured.line,
                                   measured.bytes, kMaxBytes));
    }
    CollectiveBenchRow& row = rows.emplace_back();
    row.bytes = measured.bytes;
    row.measured_seconds = measured.in_place_us * 1e-6;
  }
  return rows;
}

}  // namespace

CollectiveBenchResult run_collective_bench(const CollectiveBenchOptions& asked) {
  const CollectiveBenchOptions options = resolved(asked);
  CollectiveBenchResult result;
  result.kind = parse_kind(options.op);
  result.ranks = options.ranks;
  const auto models = sim::network_model_names();
  if (std::find(models.begin(), models.end(), options.model) == models.end()) {
    bad("--model", fmt::format("unknown network model \"{}\"", options.model),
        "analytic, flow or packet");
  }
  const topology::ClusterSpec spec = cluster_for(options);
  // A barrier carries no data: one row, whatever the sizes say.
  std::vector<CollectiveBenchRow> rows = !options.compare.empty() ? rows_of_log(options)
                                         : carries_data(result.kind)
                                             ? rows_of_sizes(options, asked)
                                             : std::vector<CollectiveBenchRow>(1);

  const topology::Cluster cluster(spec);
  sim::NetworkOptions network;
  network.model = options.model;
  if (options.library != "nccl" && options.library != "ideal") {
    bad("--library", fmt::format("unknown collective library \"{}\"", options.library), "nccl or ideal");
  }
  network.library = options.library;
  if (options.channels != "auto") {
    const char* end = options.channels.data() + options.channels.size();
    const auto [parsed_to, error] =
        std::from_chars(options.channels.data(), end, network.ring_channels);
    if (error != std::errc() || parsed_to != end || network.ring_channels < 1) {
      bad("--channels", fmt::format("expected \"auto\" or a whole number of rings >= 1, got \"{}\"",
                                    options.channels));
    }
  }

  sim::CommRequest request;
  request.kind = result.kind;
  for (std::int32_t r = 0; r < options.ranks; ++r) request.endpoints.push_back(r);
  if (!result.kind) {
    if (options.ranks < 2)
      bad("--ranks", "a send/recv needs at least 2 ranks", "--ranks 2 or more");
    if (options.algorithms != "auto") {
      bad("--algo", "a send/recv has no algorithm to choose", "leave --algo at auto");
    }
    // Each send in the communicator of all N ranks, as sendrecv_perf runs it (nccl_p2p.h).
    request.communicator_ranks = options.ranks;
    std::set<int> nodes;
    for (const std::int32_t r : request.endpoints) nodes.insert(cluster.node_of(r));
    request.communicator_nodes = static_cast<std::int32_t>(nodes.size());
  }
  std::vector<program::Algorithm> algorithms;
  for (const std::string& name : split(options.algorithms, ',')) {
    const auto algorithm = program::algorithm_from_name(name);
    if (!algorithm || *algorithm == program::Algorithm::kParameterServer) {
      bad("--algo", fmt::format("unknown algorithm \"{}\"", name),
          "ring, tree, hd, hier, direct, nvls, collnet, nvls_tree or auto");
    }
    if (*algorithm != program::Algorithm::kAuto) {
      if (auto reason = collectives::unsupported_reason(sim::collective_spec(cluster, network, request, *algorithm))) {
        bad("--algo", *reason);
      }
      if (const auto missing = sim::nccl::missing_algorithm(*result.kind, *algorithm);
          missing && network.library == "nccl") {
        bad("--algo", "NCCL " + *missing, "--library ideal prices every schedule dtsim has");
      }
    }
    algorithms.push_back(*algorithm);
    result.algorithms.push_back(name);
  }
  if (algorithms.empty())
    bad("--algo", "expected at least one algorithm",
        "ring, tree, hd, hier, direct, nvls, collnet, nvls_tree or auto");

  for (CollectiveBenchRow& row : rows) {
    request.bytes = row.bytes;
    for (program::Algorithm algorithm : algorithms) {
      request.algorithm = algorithm;
      sim::Engine engine;
      auto model = sim::make_network_model(network, engine, cluster);
      if (!result.kind) {  // rank r sends to r + 1 and receives from r − 1, all at once
        sim::Time end;
        for (const std::int32_t r : request.endpoints) {
          sim::CommRequest send = request;
          send.endpoints = {r, (r + 1) % options.ranks};
          model->start(send,
                       [&end](const sim::CommResult& done) { end = std::max(end, done.end); });
        }
        engine.run();
        row.seconds.push_back(end.seconds());
        row.chosen.emplace_back("p2p");
        continue;
      }
      sim::CommResult outcome;
      model->start(request, [&outcome](const sim::CommResult& done) { outcome = done; });
      engine.run();
      row.seconds.push_back((outcome.end - outcome.start).seconds());
      std::string chosen(program::algorithm_name(outcome.algorithm));
      if (outcome.protocol) chosen += fmt::format("/{}", sim::nccl::protocol_name(*outcome.protocol));
      row.chosen.push_back(std::move(chosen));
    }
  }
  result.rows = std::move(rows);
  result.title = fmt::format("{} on {} ranks — {} × {}, {}, {} model, {} library", options.op, options.ranks,
                             spec.nodes, spec.node.name, spec.fabric.name, options.model, options.library);
  if (!options.compare.empty()) {
    result.title += fmt::format("; measured: {} (in-place)", options.compare);
  }
  return result;
}

namespace {

// dtsim's time against the log's at one size: (dtsim − measured) / measured.
double relative_error(const CollectiveBenchRow& row, std::size_t algorithm) {
  return (row.seconds[algorithm] - *row.measured_seconds) / *row.measured_seconds;
}

// One algorithm's errors over the sizes a log measured: the median and largest |error|.
struct ComparisonSummary {
  std::size_t sizes = 0;
  double median_abs_error = 0;
  double max_abs_error = 0;
  std::int64_t max_at_bytes = 0;
};

ComparisonSummary error_summary(const CollectiveBenchResult& result, std::size_t algorithm) {
  ComparisonSummary summary;
  std::vector<double> errors;
  for (const CollectiveBenchRow& row : result.rows) {
    if (!row.measured_seconds) continue;
    const double error = std::abs(relative_error(row, algorithm));
    errors.push_back(error);
    if (error >= summary.max_abs_error) {
      summary.max_abs_error = error;
      summary.max_at_bytes = row.bytes;
    }
  }
  summary.sizes = errors.size();
  summary.median_abs_error = median(std::move(errors));
  return summary;
}

bool compared(const CollectiveBenchResult& result) {
  return !result.rows.empty() && result.rows.front().measured_seconds.has_value();
}

}  // namespace

std::string op_name(const CollectiveBenchResult& result) {
  return result.kind ? std::string(program::collective_name(*result.kind)) : kSendRecv;
}

double bus_bandwidth_factor(const CollectiveBenchResult& result) {
  return result.kind ? collectives::bus_bandwidth_factor(*result.kind, result.ranks) : 1.0;
}

std::string collective_bench_json(const CollectiveBenchResult& result) {
  const double factor = bus_bandwidth_factor(result);
  nlohmann::json json = {{"title", result.title},
                         {"op", op_name(result)},
                         {"ranks", result.ranks},
                         {"algorithms", result.algorithms},
                         {"rows", nlohmann::json::array()}};
  for (const CollectiveBenchRow& row : result.rows) {
    nlohmann::json entry = {{"bytes", row.bytes}, {"results", nlohmann::json::array()}};
    for (std::size_t a = 0; a < row.seconds.size(); ++a) {
      const double algbw = row.seconds[a] > 0 ? static_cast<double>(row.bytes) / row.seconds[a] / 1e9 : 0;
      nlohmann::json& ran =
          entry["results"].emplace_back(nlohmann::json{{"algorithm", result.algorithms[a]},
                                                       {"ran", row.chosen[a]},
                                                       {"time_us", row.seconds[a] * 1e6}});
      if (carries_data(result.kind)) {
        ran["algbw_gbyte_s"] = algbw;
        ran["busbw_gbyte_s"] = algbw * factor;
      }
      if (row.measured_seconds) ran["error"] = relative_error(row, a);
    }
    if (row.measured_seconds) entry["measured_in_place_us"] = *row.measured_seconds * 1e6;
    json["rows"].push_back(std::move(entry));
  }
  if (compared(result)) {
    json["comparison"] = nlohmann::json::array();
    for (std::size_t a = 0; a < result.algorithms.size(); ++a) {
      const ComparisonSummary summary = error_summary(result, a);
      json["comparison"].push_back({{"algorithm", result.algorithms[a]},
                                    {"sizes", summary.sizes},
                                    {"median_abs_error", summary.median_abs_error},
                                    {"max_abs_error", summary.max_abs_error},
                                    {"max_at_bytes", summary.max_at_bytes}});
    }
  }
  return json.dump(2) + "\n";
}

std::string format_collective_bench(const CollectiveBenchResult& result) {
  // Sizes up to kMaxBytes (1 TiB: 13 digits) keep the columns aligned.
  std::string out =
      fmt::format("# {}\n#\n# {:>13} {:>13} {:>6}", result.title, "size", "count", "type");
  const bool measured = compared(result);
  for (std::size_t a = 0; a < result.algorithms.size(); ++a) {
    out += fmt::format(" | {:>12} {:>12} {:>11} {:>11}", "algo", "time(us)", "algbw(GB/s)", "busbw(GB/s)");
    if (measured) out += fmt::format(" {:>8}", "error");
  }
  if (measured) out += fmt::format(" | {:>12}", "measured(us)");
  out += "\n";
  const double factor = bus_bandwidth_factor(result);
  std::vector<std::string> fastest;
  for (const CollectiveBenchRow& row : result.rows) {
    if (carries_data(result.kind)) {
      out += fmt::format("  {:>13} {:>13} {:>6}", row.bytes, row.bytes / kFloatBytes, "float");
    } else {
      out += fmt::format("  {:>13} {:>13} {:>6}", "-", "-", "-");
    }
    std::size_t best = 0;
    for (std::size_t a = 0; a < row.seconds.size(); ++a) {
      const double algbw = row.seconds[a] > 0 ? static_cast<double>(row.bytes) / row.seconds[a] / 1e9 : 0;
      out += carries_data(result.kind)
                 ? fmt::format(" | {:>12} {:>12.2f} {:>11.2f} {:>11.2f}", row.chosen[a],
                               row.seconds[a] * 1e6, algbw, algbw * factor)
                 : fmt::format(" | {:>12} {:>12.2f} {:>11} {:>11}", row.chosen[a],
                               row.seconds[a] * 1e6, "-", "-");
      if (measured) out += fmt::format(" {:>+7.1f}%", 100 * relative_error(row, a));
      if (row.seconds[a] < row.seconds[best]) best = a;
    }
    if (measured) out += fmt::format(" | {:>12.2f}", *row.measured_seconds * 1e6);
    out += "\n";
    fastest.push_back(row.chosen[best]);
  }
  // Where the fastest algorithm changes (between algorithms compared, or auto's own choice).
  for (std::size_t i = 1; i < fastest.size(); ++i) {
    if (fastest[i] != fastest[i - 1]) {
      out += fmt::format("# crossover: {} is faster up to {}, {} from {}\n", fastest[i - 1],
                         human_size(result.rows[i - 1].bytes), fastest[i], human_size(result.rows[i].bytes));
    }
  }
  for (std::size_t a = 0; measured && a < result.algorithms.size(); ++a) {
    const ComparisonSummary summary = error_summary(result, a);
    out += fmt::format(
        "# against the log, {}: median |error| {:.1f} %, max {:.1f} % (at {}) over {} sizes\n",
        result.algorithms[a], 100 * summary.median_abs_error, 100 * summary.max_abs_error,
        human_size(summary.max_at_bytes), summary.sizes);
  }
  return out;
}

}  // namespace scenarios
