// The TOML schema of a scenario and its validation (see scenario_loader.h and
// docs/scenario.md). The only file in dtsim that includes toml++.
#include "scenarios/scenario_loader.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <sstream>
#include <string_view>
#include <variant>

#include "scenarios/one_line.h"
#include "scenarios/validation.h"
#include "sim/collectives/schedule.h"
#include "sim/net/network_model.h"
#include "strategies/lowering.h"
#include "strategies/model.h"
#include "strategies/transformer_ops.h"
#include "topology/presets.h"

namespace scenarios {

ScenarioError::ScenarioError(std::string location, std::string key, std::string message,
                             std::string hint, ErrorKind kind)
    : std::runtime_error(one_line(location) + ": " + (key.empty() ? "" : one_line(key) + ": ") +
                         one_line(message) + (hint.empty() ? "" : " (" + one_line(hint) + ")")),
      location_(std::move(location)),
      key_(std::move(key)),
      message_(std::move(message)),
      hint_(std::move(hint)),
      kind_(kind) {}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  const auto lower = [](std::string text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    return text;
  };
  // One that differs only in case ("H100-SXM5"), else the shortest that holds the word whole
  // ("h100" in "h100-sxm5", which is 5 edits away where "b200" is 2), else the nearest by edits.
  const std::string word_lower = lower(word);
  std::string holding;
  for (const std::string& candidate : candidates) {
    const std::string candidate_lower = lower(candidate);
    if (candidate_lower == word_lower) return candidate;
    if (word.size() >= 3 && candidate_lower.find(word_lower) != std::string::npos &&
        (holding.empty() || candidate.size() < holding.size())) {
      holding = candidate;
    }
  }
  if (!holding.empty()) return holding;
  // Of equally near ones, the one that shares the longest beginning ("tpp": "tp", not "pp").
  const auto shared_prefix = [&word_lower](const std::string& candidate_lower) {
    return static_cast<std::size_t>(std::mismatch(word_lower.begin(), word_lower.end(),
                                                  candidate_lower.begin(), candidate_lower.end())
                                        .first -
                                    word_lower.begin());
  };
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, word.size() / 3) + 1;
  std::size_t best_prefix = 0;
  for (const std::string& candidate : candidates) {
    // The distance is at least the difference in length: a pasted 20 MB value costs nothing.
    const std::size_t length_difference =
        word.size() > candidate.size() ? word.size() - candidate.size() : candidate.size() - word.size();
    if (length_difference > best_distance) continue;
    const std::string candidate_lower = lower(candidate);
    const std::size_t distance = edit_distance(word_lower, candidate_lower);
    const std::size_t prefix = shared_prefix(candidate_lower);
    if (distance < best_distance ||
        (distance == best_distance && !best.empty() && prefix > best_prefix)) {
      best = candidate;
      best_distance = distance;
      best_prefix = prefix;
    }
  }
  return best;
}

namespace {

constexpr double kGiga = 1e9;
constexpr std::int64_t kLargestCount = std::int64_t{1} << 30;
// A quadrillion parameters, hundreds of times today's largest models: byte counts of model
// states (16 bytes per parameter with Adam) stay far below 2^63.
constexpr double kLargestParameterCount = 1e15;
constexpr double kLargestNumber = std::numeric_limits<double>::max();
constexpr std::int64_t kLargestSweep = 10000;  // points of one [sweep]
// No scenario quantity comes near this in its unit; unit conversions (at most × 1e12) then
// stay finite.
constexpr double kLargestMagnitude = 1e30;
// Sizes beyond any machine or model built today.
constexpr std::int64_t kMaxNodes = 16384;
constexpr std::int64_t kMaxPerNode = 576;  // the largest NVLink domain NVIDIA has announced (NVL576)
constexpr int kMaxMeshGpus = 16;            // full meshes built have 8 (MI300X); rings on larger ones cost a search
constexpr std::int64_t kMaxStreamingMultiprocessors = 1024;  // far above any GPU (H100: 132)
constexpr double kMaxOverlapSlowdown = 10;  // an overlapped op 11× slower: far beyond any measurement
constexpr std::int64_t kMaxDimension = std::int64_t{1} << 24;
constexpr std::int64_t kMaxSteps = 10000;
constexpr std::int64_t kMaxLayers = 10000;  // the deepest published transformers have a few hundred
constexpr double kMaxStepSeconds = 1e6;
// A stated compute time below a microsecond: shorter than any GPU kernel's launch, and its per-op
// shares would round to the engine's picoseconds (a zero step).
constexpr double kMinStatedSeconds = 1e-6;
constexpr double kTera = 1e12;
constexpr double kMicro = 1e-6;
// torch.distributed.fsdp.wrap.size_based_auto_wrap_policy's default min_num_params.
constexpr double kTorchMinNumParams = 1e8;

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& word : words) out += (out.empty() ? "" : ", ") + word;
  return out;
}

std::string node_text(const toml::node& node) {
  std::ostringstream out;
  if (const auto* text = node.as_string()) {
    out << '"' << text->get() << '"';
  } else if (const auto* number = node.as_floating_point()) {
    // The shortest form that reads back the same, still a float: "8.0" where an integer is asked.
    std::string digits = fmt::format("{}", number->get());
    if (digits.find_first_of(".en") == std::string::npos) digits += ".0";
    out << digits;
  } else if (const auto* array = node.as_array()) {
    out << '[';
    for (std::size_t i = 0; i < array->size(); ++i) out << (i ? ", " : "") << node_text(*array->get(i));
    out << ']';
  } else if (node.is_table()) {
    out << "a table";  // its keys would spread the message over lines
  } else {
    node.visit([&out](const auto& value) { out << value; });
  }
  return out.str();
}

// Where values came from that are not in the file: --set and sweep points, by dotted key.
using Origins = std::map<std::string, std::string>;

// "FILE:LINE:COLUMN" of `node`, or of the value at `dotted_key` in the file as parsed when `node`
// is a copy (toml++ copies no source positions); empty when neither knows its line.
std::string file_position(const toml::node* node, const toml::table* as_written,
                          const std::string& dotted_key, const std::string& file) {
  if (node == nullptr || node->source().begin.line == 0) {
    node = as_written != nullptr ? as_written->at_path(dotted_key).node() : nullptr;
  }
  if (node == nullptr || node->source().begin.line == 0) return "";
  return fmt::format("{}:{}:{}", file, node->source().begin.line, node->source().begin.column);
}

// Reads one TOML table, remembering which keys it was asked for, so that every other key
// can be reported as unknown (with a suggestion among the known ones).
class TableReader {
 public:
  // `as_written`: the file as parsed, whose values know their lines when `table` is a copy (a
  // sweep point's or a variant's: toml++ copies no source positions).
  TableReader(const toml::table* table, std::string path, const std::string& file,
              const Origins& origins, std::string anchor, const toml::table* as_written = nullptr)
      : table_(table),
        path_(std::move(path)),
        file_(file),
        origins_(origins),
        anchor_(std::move(anchor)),
        as_written_(as_written) {}

  std::string dotted(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }

  std::string location_of(const toml::node* node, const std::string& dotted_key) const {
    if (auto it = origins_.find(dotted_key); it != origins_.end()) return it->second;
    if (const std::string position = file_position(node, as_written_, dotted_key, file_);
        !position.empty()) {
      return position;
    }
    return anchor_;
  }
  std::string location() const { return table_ ? location_of(table_, path_) : anchor_; }
  // Whether `key`'s value came from the command line or a sweep point rather than the file.
  bool overridden(std::string_view key) const { return origins_.count(dotted(key)) > 0; }

  // Of keys whose relation fails, the one to blame: the first set by --set or a sweep point (the
  // change that broke it), else the first this table states, else `fallback`.
  std::string_view culprit(std::initializer_list<std::string_view> keys,
                           std::string_view fallback) {
    for (std::string_view key : keys) {
      if (overridden(key)) return key;
    }
    for (std::string_view key : keys) {
      if (node(key) != nullptr) return key;
    }
    return fallback;
  }

  [[noreturn]] void fail(std::string_view key, std::string message, std::string hint = {},
                         ErrorKind kind = ErrorKind::kScenario) const {
    const toml::node* node = table_ ? table_->get(key) : nullptr;
    throw ScenarioError(node ? location_of(node, dotted(key)) : location(), dotted(key),
                        std::move(message), std::move(hint), kind);
  }
  // The value at `key` is wrong by itself (its type, its range, an unknown name).
  [[noreturn]] void fail_value(std::string_view key, std::string message,
                               std::string hint = {}) const {
    fail(key, std::move(message), std::move(hint), ErrorKind::kValue);
  }

  const toml::node* node(std::string_view key) {
    asked_.emplace(key);
    return table_ ? table_->get(key) : nullptr;
  }

  std::optional<double> number(std::string_view key) {
    const toml::node* value = node(key);
    if (value == nullptr) return std::nullopt;
    if (const auto* integer = value->as_integer()) return static_cast<double>(integer->get());
    if (const auto* floating = value->as_floating_point()) {
      if (!(std::abs(floating->get()) <= kLargestMagnitude)) {
        fail_value(key, fmt::format("expected a finite number of magnitude at most {:g}, got {}",
                                    kLargestMagnitude, node_text(*value)));
      }
      return floating->get();
    }
    fail_value(key, fmt::format("expected a number, got {}", node_text(*value)));
  }

  std::optional<std::int64_t> integer(std::string_view key) {
    const toml::node* value = node(key);
    if (value == nullptr) return std::nullopt;
    if (const auto* integer = value->as_integer()) return integer->get();
    // More digits than TOML's 64-bit integers hold reach here as text (a --set value); a quoted
    // count ("2") is still just text.
    if (const auto* text = value->as_string()) {
      const std::string& written = text->get();
      const std::size_t sign = !written.empty() && (written[0] == '+' || written[0] == '-') ? 1 : 0;
      if (written.size() > sign + 18 &&
          written.find_first_not_of("0123456789", sign) == std::string::npos) {
        fail_value(key, fmt::format(
                            "expected an integer, got one of {} digits, past any count dtsim takes",
                            written.size() - sign));
      }
    }
    fail_value(key, fmt::format("expected an integer, got {}", node_text(*value)));
  }

  std::optional<bool> boolean(std::string_view key) {
    const toml::node* value = node(key);
    if (value == nullptr) return std::nullopt;
    if (const auto* flag = value->as_boolean()) return flag->get();
    fail_value(key, fmt::format("expected true or false, got {}", node_text(*value)));
  }

  std::optional<std::string> text(std::string_view key) {
    const toml::node* value = node(key);
    if (value == nullptr) return std::nullopt;
    if (const auto* string = value->as_string()) return string->get();
    fail_value(key, fmt::format("expected a string, got {}", node_text(*value)));
  }

  std::optional<std::string> choice(std::string_view key, const std::vector<std::string>& choices) {
    std::optional<std::string> value = text(key);
    if (!value || std::find(choices.begin(), choices.end(), *value) != choices.end()) return value;
    const std::string suggestion = closest_match(*value, choices);
    fail_value(key, fmt::format("unknown value \"{}\"; expected one of: {}", *value, join(choices)),
               suggestion.empty() ? "" : fmt::format("did you mean \"{}\"?", suggestion));
  }

  // One of an enum's scenario spellings (strategies::named_values).
  template <typename T>
  T named(std::string_view key, T fallback) {
    const auto value = choice(key, strategies::names_of<T>());
    return value ? *strategies::from_name<T>(*value) : fallback;
  }

  // Numbers with a range check: a value out of its range is wrong by itself (ErrorKind::kValue).
  double positive(std::string_view key, double fallback) {
    const double value = number(key).value_or(fallback);
    if (!(value > 0)) fail_value(key, fmt::format("expected a positive number, got {}", value));
    return value;
  }
  std::optional<double> optional_positive(std::string_view key, double maximum = kLargestNumber) {
    const auto value = number(key);
    if (value && !(*value > 0 && *value <= maximum)) {
      fail_value(key, maximum == kLargestNumber
                          ? fmt::format("expected a positive number, got {}", *value)
                          : fmt::format("expected a positive number up to {:g}, got {:g}", maximum,
                                        *value));
    }
    return value;
  }
  double non_negative(std::string_view key, double fallback) { return optional_non_negative(key).value_or(fallback); }
  std::optional<double> optional_non_negative(std::string_view key) {
    const auto value = number(key);
    if (value && !(*value >= 0))
      fail_value(key, fmt::format("expected a number >= 0, got {}", *value));
    return value;
  }
  double fraction(std::string_view key, double fallback) { return optional_fraction(key).value_or(fallback); }
  std::optional<double> optional_fraction(std::string_view key) {
    const auto value = number(key);
    if (value && !(*value > 0 && *value <= 1)) {
      fail_value(key, fmt::format("expected a fraction in (0, 1], got {}", *value),
                 "efficiencies are the share of the peak rate actually reached");
    }
    return value;
  }
  // Integers are range-checked before any narrowing; the bounds keep every product of them
  // (GPUs, tokens, matrix sizes) far from overflow.
  std::int64_t count(std::string_view key, std::int64_t fallback, std::int64_t minimum = 1,
                     std::int64_t maximum = kLargestCount) {
    const std::int64_t value = integer(key).value_or(fallback);
    if (value < minimum && maximum == kLargestCount) {
      fail_value(key, fmt::format("expected an integer >= {}, got {}", minimum, value));
    }
    if (value < minimum || value > maximum) {
      fail_value(key, fmt::format("expected an integer between {} and {}, got {}", minimum, maximum,
                                  value));
    }
    return value;
  }
  // A parallel degree: at least 1 by itself, at most the cluster's GPUs in combination with it.
  std::int64_t degree(std::string_view key, std::int64_t fallback, std::int64_t gpus) {
    const std::int64_t value = count(key, fallback);
    if (value > gpus)
      fail(key, fmt::format("expected an integer between 1 and {}, got {}", gpus, value));
    return value;
  }
  std::int64_t required_count(std::string_view key, std::int64_t maximum, std::string hint) {
    if (node(key) == nullptr) fail(key, "missing required key", std::move(hint));
    return count(key, 0, 1, maximum);
  }

  TableReader child(std::string_view key) {
    const toml::node* value = node(key);
    if (value != nullptr && !value->is_table()) {
      fail_value(key, fmt::format("expected a table, got {}", node_text(*value)),
                 fmt::format("write it as [{}]", dotted(key)));
    }
    return TableReader(value ? value->as_table() : nullptr, dotted(key), file_, origins_,
                       location(), as_written_);
  }

  bool present() const { return table_ != nullptr; }

  // Every key of the table must have been asked for.
  void finish() const {
    if (table_ == nullptr) return;
    const std::vector<std::string> known(asked_.begin(), asked_.end());
    for (auto&& [key, value] : *table_) {
      const std::string name(key.str());
      if (asked_.count(name)) continue;
      const std::string suggestion = closest_match(name, known);
      throw ScenarioError(location_of(&value, dotted(name)), dotted(name),
                          path_.empty() ? "unknown key" : fmt::format("unknown key in [{}]", path_),
                          suggestion.empty() ? fmt::format("known keys: {}", join(known))
                                             : fmt::format("did you mean \"{}\"?", dotted(suggestion)));
    }
  }

 private:
  const toml::table* table_;
  std::string path_;
  const std::string& file_;
  const Origins& origins_;
  std::string anchor_;
  const toml::table* as_written_;
  std::set<std::string> asked_;
};

// bandwidth (GB/s or Gb/s), latency (µs), efficiency.
void read_link(TableReader reader, topology::LinkSpec& link) {
  const auto gbyte = reader.optional_positive("bandwidth_gbyte_s");
  const auto gbit = reader.optional_positive("bandwidth_gbit_s");
  if (gbyte && gbit) {
    reader.fail("bandwidth_gbit_s", "give the bandwidth once",
                "bandwidth_gbyte_s is in GB/s, bandwidth_gbit_s in Gb/s; keep one");
  }
  if (gbyte) link.bandwidth = *gbyte * kGiga;
  if (gbit) link.bandwidth = *gbit * kGiga / 8;
  link.latency = reader.non_negative("latency_us", link.latency / kMicro) * kMicro;
  link.efficiency = reader.fraction("efficiency", link.efficiency);
  reader.finish();
}

void read_device(TableReader reader, topology::DeviceSpec& device) {
  if (auto preset = reader.choice("preset", topology::device_preset_names())) {
    device = *topology::device_preset(*preset);
  }
  auto rate = [&reader](std::string_view key, double& field) {
    if (auto value = reader.number(key)) {
      if (!(*value >= 0))
        reader.fail_value(key, fmt::format("expected a number >= 0, got {}", *value));
      field = *value * kTera;
    }
  };
  rate("bf16_tflops", device.bf16_flops);
  rate("fp16_tflops", device.fp16_flops);
  rate("fp32_tflops", device.fp32_flops);
  rate("tf32_tflops", device.tf32_flops);
  rate("fp8_tflops", device.fp8_flops);
  device.memory_bytes = reader.positive("memory_gb", device.memory_bytes / kGiga) * kGiga;
  device.memory_bandwidth =
      reader.positive("memory_bandwidth_gbyte_s", device.memory_bandwidth / kGiga) * kGiga;
  device.nvlink_bandwidth = reader.non_negative("nvlink_gbyte_s", device.nvlink_bandwidth / kGiga) * kGiga;
  // A GPU described by its rates borrows the measured curves of the architecture it shares.
  if (auto architecture = reader.choice("architecture", topology::device_preset_names())) {
    topology::adopt_measurements(device, *topology::device_preset(*architecture));
  }
  device.sms = static_cast<int>(reader.count("sms", device.sms, 0, kMaxStreamingMultiprocessors));
  if (device.bf16_flops <= 0)
    reader.fail_value("bf16_tflops", "the device needs a positive bf16 rate");
  reader.finish();
}

topology::ClusterSpec read_cluster(TableReader reader) {
  topology::ClusterSpec cluster;
  const std::string node_name = reader.choice("node", topology::node_preset_names()).value_or("hgx-h100");
  cluster.node = *topology::node_preset(node_name);
  topology::NodeSpec& node = cluster.node;
  const topology::NodeSpec preset = node;
  cluster.nodes = static_cast<int>(reader.required_count("nodes", kMaxNodes, "how many nodes, e.g. nodes = 2"));
  node.gpus = static_cast<int>(reader.count("gpus_per_node", node.gpus, 1, kMaxPerNode));
  // The preset's NICs per GPU carry over to another GPU count (a GB200 rack cut to 8 GPUs kept
  // its 72 NICs, which no 32-port leaf holds): ⌈preset NICs × GPUs / preset GPUs⌉.
  const int scaled_nics = static_cast<int>(
      (static_cast<std::int64_t>(preset.nics) * node.gpus + preset.gpus - 1) / preset.gpus);
  node.nics = static_cast<int>(reader.count("nics_per_node", scaled_nics, 1, kMaxPerNode));
  if (auto kind = reader.choice("interconnect", {"nvswitch", "pcie", "mesh"})) {
    node.kind = *kind == "nvswitch" ? topology::NodeKind::kNvSwitch
                : *kind == "pcie"   ? topology::NodeKind::kPcie
                                    : topology::NodeKind::kFullMesh;
  }
  const bool mesh = node.kind == topology::NodeKind::kFullMesh;
  read_device(reader.child("gpu"), node.gpu);
  // A different GPU, GPU count or interconnect brings its own NVLink (or xGMI) rate unless
  // [cluster.nvlink] says otherwise: a full mesh splits the GPU's rate over its gpus − 1 links.
  if (node.gpu.nvlink_bandwidth != preset.gpu.nvlink_bandwidth || node.kind != preset.kind ||
      (mesh && node.gpus != preset.gpus) || node.nvlink.bandwidth <= 0) {
    node.nvlink.bandwidth = mesh ? node.gpu.nvlink_bandwidth / std::max(1, node.gpus - 1) : node.gpu.nvlink_bandwidth;
  }
  // Another interconnect brings its own link latency: a direct link is a whole GPU-to-GPU path.
  if ((node.nvlink.latency <= 0 || node.kind != preset.kind) && node.kind != topology::NodeKind::kPcie) {
    node.nvlink.latency = topology::node_preset(mesh ? "mi300x-8" : "hgx-h100")->nvlink.latency;
  }
  if (mesh && node.gpus > kMaxMeshGpus) {
    reader.fail("gpus_per_node",
                fmt::format("a full mesh of {} GPUs would need {} links per GPU; dtsim models meshes of up to {} GPUs",
                            node.gpus, node.gpus - 1, kMaxMeshGpus),
                "MI300X platforms have 8; use interconnect = \"nvswitch\" for a switched domain");
  }
  read_link(reader.child("nvlink"), node.nvlink);
  read_link(reader.child("pcie"), node.pcie);
  node.nvlink_sharp = reader.boolean("nvlink_sharp").value_or(node.nvlink_sharp && node.kind == topology::NodeKind::kNvSwitch);
  if (node.nvlink_sharp && node.kind != topology::NodeKind::kNvSwitch) {
    reader.fail("nvlink_sharp",
                fmt::format("NVLink SHARP reduces in an NVSwitch; these nodes have none (interconnect = \"{}\")",
                            mesh ? "mesh" : "pcie"),
                "drop nvlink_sharp, or use an NVSwitch node such as node = \"hgx-h100\"");
  }
  if (auto host_cpu = reader.choice("host_cpu", topology::host_cpu_names())) {
    node.host_cpu = *topology::host_cpu(*host_cpu);
  }
  // A preset's own host (GB200's Grace per two GPUs over NVLink-C2C) belongs to its GPU,
  // interconnect and host CPU: another of these is another node, whose host is the server host
  // over PCIe ([cluster.parameter_servers.host], [cluster.pcie]).
  if (node.host && (node.gpu.name != preset.gpu.name || node.kind != preset.kind ||
                    node.host_cpu != preset.host_cpu)) {
    node.host.reset();
  }
  if (node.kind != topology::NodeKind::kPcie && node.nvlink.bandwidth <= 0) {
    reader.fail("interconnect",
                fmt::format("{} node needs GPU links, but {} has none", mesh ? "a full-mesh" : "an NVSwitch",
                            node.gpu.name),
                "set interconnect = \"pcie\" or give [cluster.nvlink] bandwidth_gbyte_s");
  }

  TableReader fabric_reader = reader.child("fabric");
  const std::string fabric_name =
      fabric_reader.choice("preset", topology::fabric_preset_names()).value_or("ib-ndr");
  cluster.fabric = *topology::fabric_preset(fabric_name);
  topology::FabricSpec& fabric = cluster.fabric;
  if (auto kind = fabric_reader.choice("kind", {"infiniband", "roce"})) {
    fabric.kind = *kind == "infiniband" ? topology::FabricKind::kInfiniBand
                                        : topology::FabricKind::kRoCE;
  }
  fabric.leaf_down_ports =
      static_cast<int>(fabric_reader.count("leaf_down_ports", fabric.leaf_down_ports, 1, 4096));
  fabric.oversubscription = fabric_reader.positive("oversubscription", fabric.oversubscription);
  if (fabric.oversubscription < 1) {
    fabric_reader.fail_value(
        "oversubscription",
        fmt::format("expected a ratio >= 1 (down : up), got {}", fabric.oversubscription),
        "1 is a non-blocking fat-tree, 2 halves the uplinks");
  }
  const double uplinks = fabric.leaf_down_ports / fabric.oversubscription;
  if (std::round(uplinks) < 1 || std::abs(uplinks - std::round(uplinks)) > 1e-9) {
    fabric_reader.fail("oversubscription",
                       fmt::format("{} down ports at {}:1 would need {:.2f} uplinks per leaf", fabric.leaf_down_ports,
                                   fabric.oversubscription, uplinks),
                       "choose a ratio that divides leaf_down_ports into a whole number of uplinks");
  }
  fabric.rail_optimized = fabric_reader.boolean("rail_optimized").value_or(fabric.rail_optimized);
  fabric.pod_leaves = static_cast<int>(fabric_reader.count("pod_leaves", fabric.pod_leaves, 0, kMaxNodes));
  fabric.spine_oversubscription = fabric_reader.positive("spine_oversubscription", fabric.spine_oversubscription);
  if (fabric.spine_oversubscription < 1) {
    fabric_reader.fail_value(
        "spine_oversubscription",
        fmt::format("expected a ratio >= 1, got {}", fabric.spine_oversubscription),
        "1 is a non-blocking core, 2 halves the spines' uplinks (and the cores)");
  }
  const double spine_uplinks = fabric.pod_leaves / fabric.spine_oversubscription;
  if (fabric.pod_leaves > 0 && (std::round(spine_uplinks) < 1 ||
                                std::abs(spine_uplinks - std::round(spine_uplinks)) > 1e-9)) {
    fabric_reader.fail(
        "spine_oversubscription",
        fmt::format("expected a ratio that divides pod_leaves ({}) into whole uplinks, got {}",
                    fabric.pod_leaves, fabric.spine_oversubscription),
        "1 is a non-blocking core, 2 halves the spines' uplinks (and the cores)");
  }
  if (fabric.pod_leaves == 0 && fabric.spine_oversubscription != 1) {
    fabric_reader.fail("spine_oversubscription", "spines have uplinks only in a three-tier fabric",
                       "set pod_leaves (leaves per pod) too, or remove spine_oversubscription");
  }
  if (fabric.rail_optimized && fabric.pod_leaves % node.nics != 0) {
    int divisor = node.nics;  // the most NICs per node that such pods hold
    while (fabric.pod_leaves % divisor != 0) --divisor;
    fabric_reader.fail(
        "pod_leaves",
        fmt::format(
            "a rail-optimized pod holds whole rail groups of {} leaves (one per NIC of a node: "
            "cluster.nics_per_node = {}), got {}",
            node.nics, node.nics, fabric.pod_leaves),
        fmt::format("e.g. pod_leaves = {}, or cluster.nics_per_node = {}",
                    node.nics * std::max(1, fabric.pod_leaves / node.nics), divisor));
  }
  fabric.sharp = fabric_reader.boolean("sharp").value_or(fabric.sharp);
  if (fabric.sharp && fabric.kind != topology::FabricKind::kInfiniBand) {
    fabric_reader.fail("sharp", "in-network reduction (SHARP) runs on InfiniBand switches, but this fabric is RoCE",
                       "set sharp = false, or kind = \"infiniband\"");
  }
  read_link(fabric_reader.child("nic"), fabric.nic);
  read_link(fabric_reader.child("uplink"), fabric.uplink);
  if (topology::leaf_ports_per_node(node, fabric) > fabric.leaf_down_ports) {
    fabric_reader.fail("leaf_down_ports",
                       fmt::format("a node's {} NICs do not fit on a leaf with {} down ports",
                                   node.nics, fabric.leaf_down_ports),
                       "raise leaf_down_ports or set rail_optimized = true");
  }
  fabric_reader.finish();

  TableReader servers = reader.child("parameter_servers");
  cluster.parameter_servers.count = static_cast<int>(servers.count("count", 0, 0, kMaxNodes));
  cluster.parameter_servers.nic =
      *topology::server_nic_preset(servers.choice("nic", topology::server_nic_preset_names()).value_or("eth-100g"));
  read_link(servers.child("link"), cluster.parameter_servers.nic);
  cluster.parameter_servers.host = *topology::device_preset("epyc-9654-2s");
  read_device(servers.child("host"), cluster.parameter_servers.host);
  servers.finish();
  reader.finish();
  return cluster;
}

// [model.moe]: a preset's mixture of experts changed key by key, or a custom one (experts,
// top_k and expert_ffn_hidden required).
void read_moe(TableReader reader, strategies::ModelSpec& model) {
  if (!reader.present()) return;
  const bool preset_moe = model.moe.has_value();
  strategies::MoeSpec moe = model.moe.value_or(strategies::MoeSpec{});
  const auto required = [&](std::string_view key, std::int64_t& field, std::int64_t minimum) {
    if (!preset_moe && reader.node(key) == nullptr) {
      reader.fail(key, "missing required key", "a mixture of experts needs experts, top_k and expert_ffn_hidden");
    }
    field = reader.count(key, field, minimum, kMaxDimension);
  };
  required("experts", moe.experts, 1);
  required("top_k", moe.top_k, 1);
  required("expert_ffn_hidden", moe.expert_ffn_hidden, 1);
  if (moe.top_k > moe.experts) {
    reader.fail("top_k", fmt::format("top_k = {} routes each token to more experts than the {} there are", moe.top_k, moe.experts),
                fmt::format("use top_k ≤ model.moe.experts = {}", moe.experts));
  }
  moe.shared_experts = reader.count("shared_experts", moe.shared_experts, 0, kMaxDimension);
  moe.shared_expert_ffn_hidden = reader.count("shared_expert_ffn_hidden", moe.shared_expert_ffn_hidden, 0, kMaxDimension);
  moe.shared_expert_gate = reader.boolean("shared_expert_gate").value_or(moe.shared_expert_gate);
  moe.layer_frequency = reader.count("layer_frequency", moe.layer_frequency, 1, kMaxLayers);
  moe.first_dense_layers = reader.count("first_dense_layers", moe.first_dense_layers, 0, kMaxLayers);
  if (moe.first_dense_layers >= model.layers) {
    reader.fail("first_dense_layers",
                fmt::format("{} dense layers leave none of the model's {} layers a mixture of experts", moe.first_dense_layers,
                            model.layers),
                fmt::format("use first_dense_layers < model.layers = {}", model.layers));
  }
  reader.choice("router", {"softmax_topk"});  // the only router modelled
  if (const auto capacity = reader.number("capacity_factor")) {
    if (!(*capacity > 0)) {
      reader.fail_value("capacity_factor",
                        fmt::format("expected a positive number, got {}", *capacity),
                        "1.0 lets each expert take its balanced share T·k/E; remove the key for "
                        "dropless routing");
    }
    moe.capacity_factor = *capacity;
  }
  if (reader.boolean("dropless").value_or(false)) moe.capacity_factor.reset();
  moe.load = reader.named("load", moe.load);
  moe.zipf_exponent = reader.non_negative("zipf_exponent", moe.zipf_exponent);
  // The weights 1/r^s must stay normal doubles (2^-1022 and up): past that the last experts' are
  // 0 or subnormal, and spreading the top experts' excess over them divides by nothing.
  if (const double largest =
          1000 / std::log2(std::max<double>(2, static_cast<double>(moe.experts)));
      moe.zipf_exponent > largest) {
    reader.fail("zipf_exponent",
                fmt::format("{:g} makes the weights 1/r^s of {} experts smaller than a double "
                            "holds (at most {:.4g})",
                            moe.zipf_exponent, moe.experts, largest),
                "an exponent of 1 to 3 already sends most tokens to a few experts");
  }
  moe.load_seed = static_cast<std::uint64_t>(reader.count("load_seed", static_cast<std::int64_t>(moe.load_seed), 0));
  if (const toml::node* fractions = reader.node("expert_fractions")) {
    const auto* list = fractions->as_array();
    double total = 0;
    moe.measured_fractions.clear();
    for (std::size_t i = 0; list != nullptr && i < list->size(); ++i) {
      const auto value = list->get(i)->value<double>();
      if (!value || !(*value >= 0)) break;
      moe.measured_fractions.push_back(*value);
      total += *value;
    }
    if (list == nullptr || moe.measured_fractions.size() != static_cast<std::size_t>(moe.experts) || !(std::abs(total - 1) < 1e-3)) {
      reader.fail("expert_fractions",
                  fmt::format("expected {} non-negative fractions (one per expert) summing to 1, got {}", moe.experts,
                              node_text(*fractions)),
                  "measured per-expert token fractions, e.g. from the router's tokens_per_expert counts divided by their sum");
    }
  }
  if ((moe.load == strategies::ExpertLoad::kMeasured) != !moe.measured_fractions.empty()) {
    reader.fail(moe.measured_fractions.empty() ? "load" : "expert_fractions",
                moe.measured_fractions.empty() ? "load = \"measured\" needs the measured shares in expert_fractions"
                                               : "expert_fractions are read only with load = \"measured\"",
                "set load = \"measured\" and expert_fractions = [...] together");
  }
  reader.finish();
  model.moe = moe;
}

// [model.mla]: multi-head latent attention's ranks and head dimensions (model.h).
void read_mla(TableReader reader, strategies::ModelSpec& model) {
  if (!reader.present()) return;
  strategies::MlaSpec mla = model.mla.value_or(strategies::MlaSpec{});
  mla.q_lora_rank = reader.count("q_lora_rank", mla.q_lora_rank, 0, kMaxDimension);
  for (auto [key, field] : {std::pair{"kv_lora_rank", &mla.kv_lora_rank}, {"qk_nope_head_dim", &mla.qk_nope_head_dim},
                            {"qk_rope_head_dim", &mla.qk_rope_head_dim}, {"v_head_dim", &mla.v_head_dim}}) {
    if (!model.mla && reader.node(key) == nullptr) {
      reader.fail(key, "missing required key", "latent attention needs kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim and v_head_dim");
    }
    *field = reader.count(key, *field, 1, kMaxDimension);
  }
  reader.finish();
  model.mla = mla;
}

// A name dtsim prints or makes a path of: 1 to 200 characters, no control character (below
// 0x20) and none of `refused`.
bool plain_name(std::string_view name, std::string_view refused) {
  return !name.empty() && name.size() <= 200 && std::none_of(name.begin(), name.end(), [&](char c) {
    return static_cast<unsigned char>(c) < 0x20 || refused.find(c) != std::string_view::npos;
  });
}

strategies::ModelSpec read_model(TableReader reader) {
  strategies::ModelSpec model;
  const auto preset = reader.choice("preset", strategies::model_preset_names());
  if (preset) {
    model = *strategies::model_preset(*preset);
  } else {
    model.name = "custom";
  }
  const std::string hint = preset ? "" : "set model.preset to a named model or give every dimension";
  auto dimension = [&](std::string_view key, std::int64_t& field, std::int64_t maximum = kMaxDimension) {
    if (!preset && reader.node(key) == nullptr) reader.fail(key, "missing required key", hint);
    field = reader.count(key, field, 1, maximum);
  };
  dimension("layers", model.layers, kMaxLayers);
  dimension("hidden", model.hidden);
  dimension("heads", model.heads);
  if (!preset) model.kv_heads = reader.integer("kv_heads").value_or(model.heads);
  model.kv_heads = reader.count("kv_heads", model.kv_heads, 1, kMaxDimension);
  dimension("ffn_hidden", model.ffn_hidden);
  dimension("vocab", model.vocab);
  dimension("sequence", model.sequence);
  if (auto name = reader.text("name")) {
    // Printed at the head of every report: no control characters (an escape sequence recoloured
    // the terminal).
    if (!plain_name(*name, "\x7f")) {
      reader.fail("name", "expected 1 to 200 characters without control characters",
                  "e.g. name = \"GPT-3 175B\"");
    }
    model.name = *name;
  }
  if (auto mlp = reader.choice("mlp", {"swiglu", "gelu"})) {
    model.mlp = *mlp == "swiglu" ? strategies::MlpKind::kSwiGlu : strategies::MlpKind::kGelu;
  }
  if (auto norm = reader.choice("norm", {"rmsnorm", "layernorm"})) {
    model.norm = *norm == "rmsnorm" ? strategies::NormKind::kRmsNorm : strategies::NormKind::kLayerNorm;
  }
  if (auto attention = reader.choice("attention", {"flash", "standard"})) {
    model.attention = *attention == "flash" ? strategies::AttentionKind::kFlash
                                            : strategies::AttentionKind::kStandard;
  }
  model.biases = reader.boolean("biases").value_or(model.biases);
  model.qkv_biases = reader.boolean("qkv_biases").value_or(model.qkv_biases);
  model.tied_embeddings = reader.boolean("tied_embeddings").value_or(model.tied_embeddings);
  model.learned_positions = reader.boolean("learned_positions").value_or(model.learned_positions);
  model.causal = reader.boolean("causal").value_or(model.causal);
  model.dropout = reader.boolean("dropout").value_or(model.dropout);
  model.fused_dropout_add = reader.boolean("fused_dropout_add").value_or(model.fused_dropout_add);
  if (auto count = reader.optional_positive("parameter_count", kLargestParameterCount)) model.parameter_count = *count;
  if (model.hidden % model.heads != 0) {
    reader.fail(
        reader.culprit({"heads", "hidden"}, "heads"),
        fmt::format("hidden size {} is not divisible by {} heads", model.hidden, model.heads));
  }
  if (model.heads % model.kv_heads != 0) {
    reader.fail(reader.culprit({"kv_heads", "heads"}, "kv_heads"),
                fmt::format("{} attention heads are not divisible by {} KV heads", model.heads,
                            model.kv_heads),
                "grouped-query attention needs heads % kv_heads == 0");
  }
  read_moe(reader.child("moe"), model);
  read_mla(reader.child("mla"), model);
  if (model.mla && model.attention != strategies::AttentionKind::kFlash) {
    reader.fail("attention", "latent attention (model.mla) is modelled with a fused attention kernel only",
                "set model.attention = \"flash\"");
  }
  reader.finish();
  return model;
}

strategies::TrainingSpec read_training(TableReader& reader, const strategies::ModelSpec& model) {
  strategies::TrainingSpec training;
  training.global_batch =
      reader.required_count("global_batch", kMaxDimension, "sequences per optimizer step, e.g. 32");
  training.micro_batch = reader.count("micro_batch", 1, 1, kMaxDimension);
  training.sequence = reader.count("sequence_length", model.sequence, 1, kMaxDimension);
  training.precision = reader.named("precision", training.precision);
  training.optimizer = reader.named("optimizer", training.optimizer);
  training.checkpointing = reader.named("activation_checkpointing", training.checkpointing);
  training.sgd_momentum = reader.non_negative("sgd_momentum", training.sgd_momentum);
  if (training.sgd_momentum > 1) {
    reader.fail_value(
        "sgd_momentum",
        fmt::format("expected a momentum between 0 and 1, got {}", training.sgd_momentum),
        "the share of the last update kept in the next, 0.9 typically; 0 is plain SGD");
  }
  training.optimizer_implementation = reader.named("optimizer_implementation", training.optimizer_implementation);
  if (training.optimizer_implementation == strategies::OptimizerImplementation::kComposer &&
      training.optimizer == strategies::OptimizerKind::kAdam) {
    reader.fail("optimizer_implementation", "Composer has no Adam, only DecoupledAdamW and DecoupledSGDW",
                "optimizer = \"adamw\"");
  }
  training.weight_decay = reader.optional_non_negative("weight_decay");
  training.gradient_clipping = reader.non_negative("gradient_clipping", training.gradient_clipping);
  training.steps = static_cast<std::int32_t>(reader.count("steps", 1, 1, kMaxSteps));
  return training;
}

// The parallel degrees and strategy; rule R2 (dp × tp × pp = GPUs) when `check_layout`.
void read_parallel(TableReader& reader, Scenario& scenario, bool check_layout) {
  strategies::ParallelSpec& parallel = scenario.lowering.parallel;
  parallel.strategy = reader.choice("strategy", strategies::strategy_names()).value_or("ddp");
  const std::int64_t gpus = scenario.cluster.gpu_count();
  parallel.tp = static_cast<std::int32_t>(reader.degree("tp", 1, gpus));
  parallel.pp = static_cast<std::int32_t>(reader.degree("pp", 1, gpus));
  parallel.cp = static_cast<std::int32_t>(reader.degree("cp", 1, gpus));
  parallel.dp = static_cast<std::int32_t>(reader.degree(
      "dp",
      std::max<std::int64_t>(1, gpus / (std::int64_t{parallel.tp} * parallel.pp * parallel.cp)),
      gpus));
  // In double: each degree may be up to the GPU count, and their product past any integer's range.
  const double world = static_cast<double>(parallel.dp) * parallel.tp * parallel.pp * parallel.cp;
  if (check_layout && world != static_cast<double>(gpus)) {  // rule R2
    reader.fail(
        reader.culprit({"dp", "tp", "pp", "cp"}, "tp"),
        fmt::format("world size dp × tp × pp{} = {} × {} × {}{} = {} does not match the cluster's "
                    "{} GPUs ({} node{} × {})",
                    parallel.cp > 1 ? " × cp" : "", parallel.dp, parallel.tp, parallel.pp,
                    parallel.cp > 1 ? fmt::format(" × {}", parallel.cp) : "", world, gpus,
                    scenario.cluster.nodes, scenario.cluster.nodes == 1 ? "" : "s",
                    scenario.cluster.node.gpus),
        "the product of the parallel degrees must equal cluster.nodes × gpus_per_node");
  }
  parallel.cp_scheme = reader.named("cp_scheme", parallel.cp_scheme);
  parallel.sequence_parallel = reader.boolean("sequence_parallel").value_or(false);
  parallel.sp_regather = reader.boolean("sequence_parallel_regather").value_or(parallel.sp_regather);
  parallel.schedule = reader.named("pipeline_schedule", parallel.schedule);
  parallel.virtual_stages = static_cast<std::int32_t>(reader.count("virtual_stages", 1, 1, 64));
  parallel.account_for_embedding_in_pipeline_split =
      reader.boolean("account_for_embedding_in_pipeline_split").value_or(false);
  parallel.account_for_loss_in_pipeline_split =
      reader.boolean("account_for_loss_in_pipeline_split").value_or(false);
  parallel.pipeline_p2p_blocking = reader.boolean("pipeline_p2p_blocking").value_or(parallel.pipeline_p2p_blocking);
  parallel.pipeline_scatter_gather = reader.boolean("pipeline_scatter_gather").value_or(parallel.pipeline_scatter_gather);
  parallel.tp_comm_overlap = reader.boolean("tp_comm_overlap").value_or(parallel.tp_comm_overlap);
  parallel.ep = static_cast<std::int32_t>(reader.degree("ep", 1, gpus));
  parallel.moe_shared_expert_overlap = reader.boolean("moe_shared_expert_overlap").value_or(parallel.moe_shared_expert_overlap);
  parallel.gpus_per_node = scenario.cluster.node.gpus;
  scenario.lowering.parameter_servers = scenario.cluster.parameter_servers.count;
}

// Rule R1 (Megatron's divisibility): tensor parallelism splits attention heads, KV heads
// and the FFN width over tp ranks.
void check_tensor_parallel_divisibility(TableReader& parallel_reader, const strategies::ModelSpec& model,
                                        std::int32_t tp) {
  if (tp == 1) return;
  const std::int64_t largest = std::gcd(model.heads, std::gcd(model.kv_heads, model.ffn_hidden));
  auto fail = [&](std::string what) {
    parallel_reader.fail(
        "tp", std::move(what),
        fmt::format("tp must divide heads, kv_heads and ffn_hidden (tp ≤ {} here); to use more GPUs per layer, "
                    "split the sequence with context parallelism{} or the layers with pipeline parallelism (parallel.pp)",
                    largest,
                    tp % largest == 0 ? fmt::format(" (tp = {}, cp = {}: the same {} GPUs per layer)", largest, tp / largest, tp)
                                      : " (parallel.cp)"));
  };
  if (model.heads % tp != 0) {
    fail(fmt::format("{} attention heads are not divisible by tp {}: each rank must hold whole heads", model.heads, tp));
  }
  if (model.kv_heads % tp != 0) {
    fail(fmt::format("model.kv_heads {} is not divisible by tp {}: with grouped-query attention each tensor-parallel "
                     "rank needs whole KV heads ({} has {} query heads but only {} KV heads)",
                     model.kv_heads, tp, model.name, model.heads, model.kv_heads));
  }
  if (model.ffn_hidden % tp != 0) {
    fail(fmt::format("model.ffn_hidden {} is not divisible by tp {}", model.ffn_hidden, tp));
  }
}

// Context parallelism: cp splits every sequence; ring and all-gather attention balance the causal
// mask over 2·cp chunks (Megatron-Core and Transformer Engine require the sequence divisible by
// 2·cp), Ulysses gives each rank whole heads.
void check_context_parallel(TableReader& parallel_reader, const Scenario& scenario) {
  const strategies::ParallelSpec& parallel = scenario.lowering.parallel;
  const strategies::LoweringInput& lowering = scenario.lowering;
  if (parallel.cp == 1) return;
  const bool ulysses = parallel.cp_scheme == strategies::ContextParallelScheme::kUlysses;
  const std::int64_t chunks = ulysses ? parallel.cp : 2 * parallel.cp;
  const std::int64_t sequence = lowering.training.sequence;
  if (sequence % chunks != 0 || (parallel.sequence_parallel && sequence / parallel.cp % parallel.tp != 0)) {
    parallel_reader.fail(
        "cp",
        fmt::format(
            "cp = {} does not divide the sequence of {} tokens (training.sequence_length){}",
            parallel.cp, sequence,
            ulysses
                ? ""
                : fmt::format(" into the 2·cp = {} chunks that balance the causal mask", chunks)),
        fmt::format("choose a sequence length that is a multiple of {}",
                    chunks * (parallel.sequence_parallel ? parallel.tp : 1)));
  }
  if (lowering.model.attention != strategies::AttentionKind::kFlash) {
    parallel_reader.fail("cp", "context parallelism is modelled with a fused attention kernel",
                         "set model.attention = \"flash\"");
  }
  if (parallel.strategy == "ps") {
    parallel_reader.fail("cp", "strategy \"ps\" trains whole replicas on its workers", "use ddp, zero or fsdp with cp");
  }
  const std::int64_t heads = lowering.model.heads / parallel.tp;
  const std::int64_t kv_heads = (lowering.model.mla ? lowering.model.heads : lowering.model.kv_heads) / parallel.tp;
  if (ulysses && (heads % parallel.cp != 0 || kv_heads % parallel.cp != 0)) {
    parallel_reader.fail("cp_scheme",
                         fmt::format("Ulysses splits the heads over cp = {}, but each "
                                     "tensor-parallel rank holds {} heads and {} KV "
                                     "heads (model.heads / tp, model.kv_heads / tp)",
                                     parallel.cp, heads, kv_heads),
                         "use cp_scheme = \"ring\" or \"all_gather\", or a cp dividing both");
  }
}

// Expert parallelism: ep splits the data-parallel ranks into groups that each hold every routed
// expert once (strategies/layout.h), so it divides dp and the experts.
void check_expert_parallel(TableReader& parallel_reader, TableReader& zero_reader, const Scenario& scenario) {
  const strategies::ParallelSpec& parallel = scenario.lowering.parallel;
  const strategies::LoweringInput& lowering = scenario.lowering;
  const auto& moe = lowering.model.moe;
  if (!moe) {
    if (parallel.ep > 1 || parallel.moe_shared_expert_overlap) {
      parallel_reader.fail(parallel.ep > 1 ? "ep" : "moe_shared_expert_overlap",
                           fmt::format("{} is a dense model: expert parallelism needs a mixture of experts", lowering.model.name),
                           "add [model.moe], use a MoE preset (mixtral-8x7b, deepseek-v3, qwen1.5-moe-a2.7b), or set ep = 1");
    }
    return;
  }
  if (parallel.ep > 1 && parallel.strategy == "ps") {
    parallel_reader.fail("ep", "strategy \"ps\" trains whole replicas on its workers", "use ddp or zero with ep");
  }
  if (moe->experts % parallel.ep != 0) {
    parallel_reader.fail("ep",
                         fmt::format("ep = {} does not divide the {} experts (model.moe.experts): each expert-parallel "
                                     "rank must hold a whole number of experts",
                                     parallel.ep, moe->experts),
                         fmt::format("use an ep that divides {}", moe->experts));
  }
  if (parallel.dp % parallel.ep != 0) {
    parallel_reader.fail("ep",
                         fmt::format("ep × tp = {} × {} = {} GPUs per expert group, but the expert groups are cut from the "
                                     "dp × tp = {} × {} data-parallel GPUs of a stage, which ep does not divide",
                                     parallel.ep, parallel.tp, parallel.ep * parallel.tp, parallel.dp, parallel.tp),
                         "choose an ep that divides parallel.dp: Megatron-Core's expert data parallelism is dp / ep");
  }
  if (parallel.tp > 1 && !parallel.sequence_parallel) {
    parallel_reader.fail("sequence_parallel",
                         "a MoE layer under tensor parallelism needs sequence parallelism (Megatron-Core requires it: "
                         "each rank routes its own share of the tokens)",
                         "set sequence_parallel = true");
  }
  if (moe->expert_ffn_hidden % parallel.tp != 0 || moe->shared_width() % parallel.tp != 0) {
    parallel_reader.fail("tp", fmt::format("tp = {} does not divide the experts' width {} (model.moe.expert_ffn_hidden) or the "
                                           "shared experts' {}",
                                           parallel.tp, moe->expert_ffn_hidden, moe->shared_width()),
                         "choose a tp dividing both widths");
  }
  const bool sharded_parameters = parallel.strategy == "fsdp" || (parallel.strategy == "zero" && lowering.zero.stage == 3);
  if (parallel.ep > 1 && sharded_parameters) {
    parallel_reader.fail("strategy",
                         "expert parallelism is modelled with DDP or ZeRO-1/2 (Megatron-Core's distributed optimizer), "
                         "not with parameters sharded per unit",
                         "use strategy = \"ddp\", or \"zero\" with zero.stage = 1 or 2");
  }
  if (parallel.ep > 1 && lowering.zero.overlap_param_gather) {
    zero_reader.fail("overlap_param_gather", "the overlapped parameter gather is not modelled for expert parameters",
                     "remove zero.overlap_param_gather with parallel.ep > 1");
  }
  if (parallel.moe_shared_expert_overlap && (parallel.ep == 1 || moe->shared_width() == 0)) {
    parallel_reader.fail("moe_shared_expert_overlap",
                         parallel.ep == 1 ? "overlaps the shared experts with the token all-to-alls, but parallel.ep is 1"
                                          : fmt::format("{} has no shared experts to overlap", lowering.model.name),
                         "remove moe_shared_expert_overlap");
  }
  if (parallel.tp_comm_overlap) {
    parallel_reader.fail("tp_comm_overlap", "tensor-parallel communication overlap is not modelled for MoE layers",
                         "set tp_comm_overlap = false for a mixture-of-experts model");
  }
}

// Combinations of strategy, degrees and knobs that make no sense.
void check_parallel_combination(TableReader& parallel_reader, TableReader& fsdp_reader, TableReader& zero_reader,
                                const Scenario& scenario) {
  const strategies::ParallelSpec& parallel = scenario.lowering.parallel;
  const strategies::LoweringInput& lowering = scenario.lowering;
  if (parallel.strategy == "ps") {
    if (lowering.parameter_servers < 1) {
      parallel_reader.fail("strategy", "strategy \"ps\" needs parameter servers, but the cluster has none",
                           "add [cluster.parameter_servers] with count = 1 or more");
    }
    if (parallel.tp != 1 || parallel.pp != 1) {
      parallel_reader.fail(parallel.tp != 1 ? "tp" : "pp",
                           "strategy \"ps\" trains whole model replicas on the workers: tp and pp must be 1",
                           "use strategy \"ddp\", \"zero\" or \"fsdp\" for tensor or pipeline parallelism");
    }
  }
  if (parallel.sequence_parallel && parallel.tp == 1) {
    parallel_reader.fail("sequence_parallel",
                         "sequence parallelism splits the sequence over the tensor-parallel group, but parallel.tp is 1",
                         "set parallel.tp > 1, or sequence_parallel = false");
  }
  if (lowering.zero.overlap_param_gather && parallel.strategy != "zero") {
    zero_reader.fail("overlap_param_gather",
                     fmt::format("overlaps the distributed optimizer's parameter gather, but parallel.strategy is \"{}\"",
                                 parallel.strategy),
                     "set parallel.strategy = \"zero\" (stage 1 or 2), or remove zero.overlap_param_gather");
  }
  if (parallel.tp_comm_overlap &&
      lowering.training.micro_batch * lowering.training.sequence % parallel.tp != 0) {
    parallel_reader.fail("tp_comm_overlap",
                         fmt::format("the chunks split micro-batch × sequence = {} tokens over tp = {}, which does not divide them",
                                     lowering.training.micro_batch * lowering.training.sequence, parallel.tp),
                         "choose a sequence length or micro-batch whose tokens tp divides");
  }
  if (parallel.tp_comm_overlap && !parallel.sequence_parallel) {
    parallel_reader.fail("tp_comm_overlap",
                         "tensor-parallel communication overlap pipelines sequence parallelism's all-gathers and "
                         "reduce-scatters, but parallel.sequence_parallel is off",
                         "set sequence_parallel = true (Megatron-Core requires it too), or tp_comm_overlap = false");
  }
  if (parallel.pipeline_scatter_gather && parallel.pp > 1 &&
      (parallel.tp == 1 || parallel.sequence_parallel)) {
    parallel_reader.fail("pipeline_scatter_gather",
                         parallel.tp == 1 ? "scatter/gather splits the activation over the tensor-parallel group, but parallel.tp is 1"
                                          : "with sequence parallelism the activation a stage sends is already split over the tensor-parallel group",
                         "set pipeline_scatter_gather = false");
  }
  if (parallel.pp > lowering.model.layers) {
    parallel_reader.fail("pp",
                         fmt::format("{} pipeline stages exceed the model's {} layers (model.layers): some stage "
                                     "would hold no layer",
                                     parallel.pp, lowering.model.layers),
                         "use at most one stage per layer");
  }
  const bool interleaved = parallel.schedule == strategies::PipelineSchedule::kInterleaved;
  if (interleaved != (parallel.virtual_stages > 1)) {
    parallel_reader.fail(interleaved ? "pipeline_schedule" : "virtual_stages",
                         interleaved ? "interleaved-1f1b needs virtual_stages ≥ 2 model chunks per pipeline stage"
                                     : fmt::format("virtual_stages = {} splits each stage into chunks, which only "
                                                   "pipeline_schedule = \"interleaved-1f1b\" runs",
                                                   parallel.virtual_stages),
                         interleaved ? "set virtual_stages = 2 (or more), or pipeline_schedule = \"1f1b\""
                                     : "set pipeline_schedule = \"interleaved-1f1b\", or virtual_stages = 1");
  }
  if (interleaved && parallel.pp < 2) {
    parallel_reader.fail("pipeline_schedule", "interleaved-1f1b needs pipeline parallelism, but parallel.pp is 1",
                         "set parallel.pp ≥ 2, or pipeline_schedule = \"1f1b\"");
  }
  if (const std::int64_t places =
          strategies::pipeline_split_places(lowering.model.layers, parallel);
      interleaved && parallel.pp * parallel.virtual_stages > places) {
    const bool accounted = places > lowering.model.layers;
    const std::string split =
        accounted
            ? fmt::format("the {} places split (the model's {} layers{}{})", places,
                          lowering.model.layers,
                          parallel.account_for_embedding_in_pipeline_split ? ", the embedding" : "",
                          parallel.account_for_loss_in_pipeline_split ? ", the loss" : "")
            : fmt::format("the model's {} layers", lowering.model.layers);
    parallel_reader.fail(
        "virtual_stages",
        fmt::format("{} stages × {} chunks exceed {}: some chunk would hold nothing", parallel.pp,
                    parallel.virtual_stages, split),
        accounted
            ? "use fewer chunks"
            : "use fewer chunks (pp × virtual_stages ≤ model.layers), or let the embedding and the "
              "loss take a layer's place each (account_for_embedding_in_pipeline_split, "
              "account_for_loss_in_pipeline_split)");
  }
  if (interleaved && lowering.training.accumulation % parallel.pp != 0) {
    parallel_reader.fail("pipeline_schedule",
                         fmt::format("interleaved 1F1B runs micro-batches in groups of pp = {}, but there are {} "
                                     "(training.gradient_accumulation)",
                                     parallel.pp, lowering.training.accumulation),
                         "make the micro-batch count a multiple of pp (as Megatron-LM requires)");
  }
  if (parallel.pp > 1 && parallel.schedule != strategies::PipelineSchedule::kGPipe &&
      lowering.training.accumulation < parallel.pp) {
    parallel_reader.fail("pp",
                         fmt::format("1F1B on {} stages (parallel.pp) needs at least {} micro-batches, got {} "
                                     "(training.gradient_accumulation): the pipeline never fills",
                                     parallel.pp, parallel.pp, lowering.training.accumulation),
                         "raise gradient_accumulation (M ≥ 4 × pp keeps the bubble under 20 %) or use gpipe");
  }
  const bool sharded_parameters =
      (parallel.strategy == "fsdp" && lowering.fsdp.sharding != strategies::ShardingStrategy::kNoShard) ||
      (parallel.strategy == "zero" && lowering.zero.stage == 3);
  if (parallel.pp > 1 && sharded_parameters) {
    parallel_reader.fail("pp", fmt::format("{} shards parameters per micro-batch and cannot be pipelined here",
                                           parallel.strategy == "fsdp" ? "FSDP" : "ZeRO-3"),
                         "combine pipeline parallelism with strategy = \"zero\", zero.stage = 1 (as Megatron-DeepSpeed does)");
  }
  if (parallel.pp > 1 && parallel.strategy == "zero" && lowering.zero.stage == 2) {
    zero_reader.fail("stage", "ZeRO-2 partitions gradients across micro-batches, which DeepSpeed does not support "
                              "with pipeline parallelism (parallel.pp > 1)",
                     "use zero.stage = 1 with pipeline parallelism");
  }
  if (parallel.strategy == "fsdp" && lowering.fsdp.sharding == strategies::ShardingStrategy::kHybridShard &&
      parallel.dp * parallel.cp * parallel.tp <= parallel.gpus_per_node) {
    fsdp_reader.fail("sharding_strategy",
                     fmt::format("HYBRID_SHARD shards inside a node and replicates across nodes, but the {} "
                                 "data-parallel ranks fit in one node (cluster.nodes = {}, gpus_per_node = {})",
                                 parallel.dp, scenario.cluster.nodes, parallel.gpus_per_node),
                     "use FULL_SHARD on a single node");
  }
}

void read_ps(TableReader reader, strategies::PsSpec& ps) {
  ps.consistency = reader.named("consistency", ps.consistency);
  // Only SSP reads it; kept for the others so that a sweep over consistency can carry it.
  ps.staleness = static_cast<std::int32_t>(reader.count("staleness", ps.staleness, 0, kMaxSteps));
  reader.finish();
}

// SSP and ASP workers push and pull each on their own, concurrently, so only a network model
// with contention shares a server's NIC among them: the analytic model prices each transfer
// alone, as if each worker had the NIC to itself (64 workers on one 100 Gb/s server came out 52×
// faster than the NIC can carry). BSP's push and pull are one collective, which it prices whole.
void check_ps_network_model(TableReader& ps, TableReader& network, const Scenario& scenario) {
  const strategies::LoweringInput& lowering = scenario.lowering;
  if (lowering.parallel.strategy != "ps" ||
      lowering.ps.consistency == strategies::PsConsistency::kBsp ||
      scenario.network.model != "analytic" || lowering.parallel.dp < 2) {
    return;
  }
  const std::string message = fmt::format(
      "ps.consistency = \"{}\" under network.model = \"analytic\": the analytic model prices "
      "each of the {} workers' pushes and pulls alone, as if each had the servers' NICs to itself",
      strategies::name_of(lowering.ps.consistency), lowering.parallel.dp);
  const std::string hint =
      "use network.model = \"flow\" (the default), which shares the NICs among the workers";
  if (ps.overridden("consistency")) ps.fail("consistency", message, hint);
  network.fail("model", message, hint);
}

// Persistent per-GPU speed differences, drawn once per rank from a seeded distribution, and
// named GPU ranks slowed by a stated factor.
void read_stragglers(TableReader reader, StragglerSpec& stragglers, std::int64_t gpus) {
  stragglers.distribution = reader.choice("distribution", {"none", "lognormal", "uniform"}).value_or("none");
  stragglers.sigma = reader.non_negative("sigma", stragglers.sigma);
  stragglers.spread = reader.non_negative("spread", stragglers.spread);
  stragglers.seed = static_cast<std::uint64_t>(reader.count("seed", static_cast<std::int64_t>(stragglers.seed), 0));
  if (const toml::node* ranks = reader.node("slow_ranks")) {
    const auto* list = ranks->as_array();
    // What is wrong with the list by itself first, so that a sweep stops on it whatever the
    // order; a rank beyond this cluster's GPUs is wrong only beside cluster.nodes.
    constexpr const char* kExample =
        "e.g. slow_ranks = [5] with slow_factor = 1.3: rank 5 computes 30 % slower";
    std::set<std::int64_t> listed;
    for (std::size_t i = 0; list != nullptr && i < list->size(); ++i) {
      const auto rank = list->get(i)->value<std::int64_t>();
      if (!rank || *rank < 0) {
        reader.fail_value(
            "slow_ranks",
            fmt::format("expected a list of GPU ranks (integers >= 0), got {}", node_text(*ranks)),
            kExample);
      }
      if (!listed.insert(*rank).second) {
        reader.fail_value("slow_ranks", fmt::format("rank {} is listed twice", *rank),
                          "list each slow rank once");
      }
      // Checked against the GPU count below.
      stragglers.slow_ranks.push_back(static_cast<std::int32_t>(*rank));
    }
    if (!listed.empty() && *listed.rbegin() >= gpus) {
      reader.fail("slow_ranks",
                  fmt::format("expected a list of GPU ranks from 0 to {}, got {}", gpus - 1,
                              node_text(*ranks)),
                  kExample);
    }
    if (list == nullptr) {
      reader.fail_value("slow_ranks",
                        fmt::format("expected a list of GPU ranks, got {}", node_text(*ranks)),
                        "e.g. slow_ranks = [5]");
    }
  }
  const std::optional<double> factor = reader.optional_positive("slow_factor");
  if (factor.has_value() != !stragglers.slow_ranks.empty()) {
    reader.fail(factor ? "slow_factor" : "slow_ranks", "slow_ranks and slow_factor go together",
                "e.g. slow_ranks = [5] and slow_factor = 1.3: rank 5 computes 30 % slower");
  }
  stragglers.slow_factor = factor.value_or(1.0);
  reader.finish();
}

void read_zero(TableReader& reader, strategies::ZeroSpec& zero) {
  zero.stage = static_cast<std::int32_t>(reader.count("stage", zero.stage, 1, 3));
  zero.implementation = reader.named("implementation", zero.implementation);
  if (zero.implementation == strategies::ZeroImplementation::kPyTorch && zero.stage != 1) {
    reader.fail("implementation", fmt::format("PyTorch's ZeroRedundancyOptimizer is ZeRO stage 1, not {}", zero.stage),
                "use implementation = \"deepspeed\", or strategy = \"fsdp\" (FULL_SHARD is ZeRO-3, SHARD_GRAD_OP ZeRO-2)");
  }
  zero.overlap_param_gather = reader.boolean("overlap_param_gather").value_or(zero.overlap_param_gather);
  if (zero.overlap_param_gather && (zero.stage == 3 || zero.implementation == strategies::ZeroImplementation::kPyTorch)) {
    reader.fail("overlap_param_gather",
                zero.stage == 3 ? "ZeRO-3 gathers each unit's parameters before its forward already"
                                : "ZeroRedundancyOptimizer sends the updated shards after the step, with no overlap",
                "overlap_param_gather is Megatron's distributed optimizer: zero.stage 1 or 2, implementation = \"deepspeed\"");
  }
}

void read_fsdp(TableReader& reader, strategies::FsdpSpec& fsdp) {
  fsdp.sharding = reader.named("sharding_strategy", fsdp.sharding);
  const std::string wrap = reader.choice("auto_wrap_policy", {"transformer_layer", "size_based"}).value_or("transformer_layer");
  const double min_num_params =
      reader.positive("min_num_params", kTorchMinNumParams);  // inert_keys() warns
  if (wrap == "size_based") fsdp.min_num_params = min_num_params;
  fsdp.backward_prefetch = reader.named("backward_prefetch", fsdp.backward_prefetch);
  fsdp.forward_prefetch = reader.boolean("forward_prefetch").value_or(fsdp.forward_prefetch);
  fsdp.limit_all_gathers = reader.boolean("limit_all_gathers").value_or(fsdp.limit_all_gathers);
  fsdp.reshard_after_forward = reader.boolean("reshard_after_forward").value_or(fsdp.reshard_after_forward);
  const std::vector<std::string> dtypes = {"bf16", "fp16", "fp32"};
  if (auto dtype = reader.choice("param_dtype", dtypes)) fsdp.param_dtype = program::dtype_from_name(*dtype);
  if (auto dtype = reader.choice("reduce_dtype", dtypes)) fsdp.reduce_dtype = program::dtype_from_name(*dtype);
  // Accepted so that a PyTorch MixedPrecision policy carries over; the transformer models
  // register no buffers (RoPE tables are recomputed), so it changes no byte.
  reader.choice("buffer_dtype", dtypes);
  fsdp.cpu_offload = reader.boolean("cpu_offload").value_or(fsdp.cpu_offload);
  fsdp.separate_reduce_scatter_group =
      reader.boolean("separate_reduce_scatter_group").value_or(fsdp.separate_reduce_scatter_group);
}

// `written` with every GPU in data parallelism and nothing else split (the degrees, sequence
// parallelism, interleaving and the knobs that need them): a layout the rules hold for, bar the
// batch's (R3), for a read whose caller chooses the layout itself.
strategies::ParallelSpec plain_data_parallel(strategies::ParallelSpec written, std::int32_t gpus) {
  written.dp = gpus;
  written.tp = written.pp = written.cp = written.ep = written.virtual_stages = 1;
  written.sequence_parallel = written.tp_comm_overlap = written.pipeline_scatter_gather = false;
  written.moe_shared_expert_overlap = false;
  written.schedule = strategies::ParallelSpec{}.schedule;
  return written;
}

// Rule R3: global batch = micro-batch × accumulation × dp.
void check_batch(TableReader& reader, strategies::TrainingSpec& training, std::int32_t dp) {
  const std::int64_t per_step = training.micro_batch * dp;
  const bool given = reader.node("gradient_accumulation") != nullptr;
  const std::int64_t accumulation_value = reader.count("gradient_accumulation", 1, 1, kMaxDimension);
  const std::optional<std::int64_t> accumulation =
      given ? std::optional<std::int64_t>(accumulation_value) : std::nullopt;
  if (accumulation) {
    if (training.global_batch != per_step * *accumulation) {
      reader.fail("global_batch",
                  fmt::format("global batch {} != micro_batch {} × gradient_accumulation {} × dp {} = {}",
                              training.global_batch, training.micro_batch, *accumulation, dp,
                              per_step * *accumulation),
                  "global batch = micro-batch × accumulation steps × data-parallel size");
    }
    training.accumulation = *accumulation;
  } else {
    if (training.global_batch % per_step != 0) {
      reader.fail("global_batch",
                  fmt::format("global batch {} is not a multiple of micro_batch {} × dp {} = {}",
                              training.global_batch, training.micro_batch, dp, per_step),
                  "global batch = micro-batch × accumulation steps × data-parallel size");
    }
    training.accumulation = training.global_batch / per_step;
  }
}

void read_ddp(TableReader reader, strategies::DdpSpec& ddp) {
  ddp.bucket_cap_mb = reader.positive("bucket_cap_mb", ddp.bucket_cap_mb);
  ddp.first_bucket_mb = reader.positive("first_bucket_mb", ddp.first_bucket_mb);
  ddp.gradient_as_bucket_view = reader.boolean("gradient_as_bucket_view").value_or(ddp.gradient_as_bucket_view);
  ddp.no_sync = reader.boolean("no_sync").value_or(ddp.no_sync);
  ddp.barrier_every_step = reader.boolean("barrier_every_step").value_or(ddp.barrier_every_step);
  ddp.overlap_grad_reduce = reader.boolean("overlap_grad_reduce").value_or(ddp.overlap_grad_reduce);
  ddp.gradient_accumulation_fusion =
      reader.boolean("gradient_accumulation_fusion").value_or(ddp.gradient_accumulation_fusion);
  reader.finish();
}

void read_network(TableReader reader, sim::NetworkOptions& network, bool& symmetry) {
  symmetry = reader.boolean("symmetry").value_or(symmetry);
  network.model = reader.choice("model", sim::network_model_names()).value_or(network.model);
  if (const toml::node* channels = reader.node("ring_channels"); channels && channels->is_string()) {
    if (channels->as_string()->get() != "auto") {
      reader.fail_value(
          "ring_channels",
          fmt::format("expected \"auto\" or an integer >= 1, got {}", node_text(*channels)),
          "\"auto\" opens one ring per NIC, as NCCL does; 1 is the textbook single ring");
    }
    network.ring_channels = 0;
  } else if (channels != nullptr) {
    network.ring_channels = static_cast<std::int32_t>(reader.count("ring_channels", 1, 1, kMaxPerNode));
  }
  network.chunk_bytes =
      reader.count("chunk_kib", network.chunk_bytes / 1024, 1, std::int64_t{1} << 20) * 1024;
  network.logp = reader.boolean("logp").value_or(network.logp);
  network.logp_overhead_s = reader.non_negative("logp_overhead_us", network.logp_overhead_s / kMicro) * kMicro;
  network.logp_gap_s = reader.non_negative("logp_gap_us", network.logp_gap_s / kMicro) * kMicro;
  reader.finish();
}

// Per-kind algorithms in [collectives], per group family in [collectives.groups.<family>].
void read_algorithm_table(TableReader& reader, const std::string& family,
                          sim::CollectiveOverrides& overrides) {
  static const std::vector<program::CollectiveKind> kKinds = {
      program::CollectiveKind::kAllReduce, program::CollectiveKind::kAllGather,
      program::CollectiveKind::kReduceScatter, program::CollectiveKind::kBroadcast,
      program::CollectiveKind::kReduce, program::CollectiveKind::kAllToAll,
      program::CollectiveKind::kBarrier};
  for (program::CollectiveKind kind : kKinds) {
    const std::string key(program::collective_name(kind));
    std::vector<std::string> names = {"auto"};
    for (program::Algorithm algorithm : collectives::algorithms_for(kind)) {
      names.emplace_back(program::algorithm_name(algorithm));
    }
    const auto chosen = reader.choice(key, names);
    if (!chosen) continue;
    sim::CollectiveOverride entry{*program::algorithm_from_name(*chosen), reader.location_of(reader.node(key), reader.dotted(key)),
                                  reader.dotted(key)};
    if (family.empty()) {
      overrides.by_kind[kind] = entry;
    } else {
      overrides.by_group[{family, kind}] = entry;
    }
  }
}

void read_collectives(TableReader reader, sim::CollectiveOverrides& overrides, std::string& library) {
  library = reader.choice("library", {"nccl", "ideal"}).value_or(library);
  read_algorithm_table(reader, "", overrides);
  TableReader groups = reader.child("groups");
  if (const toml::node* table = groups.present() ? reader.node("groups") : nullptr) {
    const std::vector<std::string> families = strategies::group_family_names();
    for (auto&& [family, value] : *table->as_table()) {
      const std::string name(family.str());
      if (std::find(families.begin(), families.end(), name) == families.end()) {
        const std::string suggestion = closest_match(name, families);
        groups.fail(name, fmt::format("no strategy makes a group family \"{}\"; expected one of: {}", name, join(families)),
                    suggestion.empty() ? "" : fmt::format("did you mean \"{}\"?", suggestion));
      }
      TableReader group = groups.child(family.str());
      read_algorithm_table(group, std::string(family.str()), overrides);
      group.finish();
    }
  }
  groups.finish();
  reader.finish();
}

void read_output(TableReader reader, Scenario& scenario) {
  if (const toml::node* ranks = reader.node("trace_ranks")) {
    constexpr const char* kExpected = "expected \"auto\", \"all\", \"none\", a list of ranks, or a string of items "
                                      "(ranks, ranges A-B, \"first-node\", \"critical\")";
    if (const auto* text = ranks->as_string()) {
      std::string why;
      const auto selection = parse_trace_selection(text->get(), &why);
      if (!selection)
        reader.fail_value("trace_ranks", fmt::format("{}: {}", kExpected, why),
                          "e.g. trace_ranks = \"0-7,critical\"");
      scenario.trace = *selection;
    } else if (const auto* list = ranks->as_array()) {
      scenario.trace = TraceSelection::none();
      for (const toml::node& entry : *list) {
        const auto* rank = entry.as_integer();
        if (rank == nullptr || rank->get() < 0 || rank->get() >= kLargestCount) {
          reader.fail_value("trace_ranks",
                            fmt::format("expected rank numbers, got {}", node_text(entry)));
        }
        const auto number = static_cast<std::int32_t>(rank->get());
        scenario.trace.ranges.emplace_back(number, number);
      }
    } else {
      reader.fail_value("trace_ranks", fmt::format("{}, got {}", kExpected, node_text(*ranks)),
                        "e.g. trace_ranks = [0, 7, 1023]");
    }
    scenario.trace.key = reader.dotted("trace_ranks");
    scenario.trace.origin = reader.location_of(ranks, scenario.trace.key);
  }
  reader.finish();
}

// [[size, efficiency], …] as `dtsim calibrate` writes it: sizes ascending, efficiencies in (0, 1].
void read_efficiency_by_size(TableReader& reader, const char* key, const char* size_name,
                             sim::EfficiencyBySize& curve) {
  const toml::node* table = reader.node(key);
  if (table == nullptr) return;
  const auto* points = table->as_array();
  const std::string expected =
      fmt::format("expected [[{}, efficiency], …] in ascending {}, efficiencies in (0, 1]", size_name, size_name);
  if (points == nullptr || points->empty()) reader.fail_value(key, expected);
  for (const toml::node& entry : *points) {
    const auto* pair = entry.as_array();
    const auto size = pair && pair->size() == 2 ? pair->get(0)->value<double>() : std::nullopt;
    const auto value = pair && pair->size() == 2 ? pair->get(1)->value<double>() : std::nullopt;
    if (!size || !value || !std::isfinite(*size) || !(*size > 0) || !(*value > 0 && *value <= 1) ||
        (!curve.empty() && *size <= curve.points.back().first)) {
      reader.fail_value(key, fmt::format("{}, got {}", expected, node_text(entry)));
    }
    curve.points.emplace_back(*size, *value);
  }
}

void read_compute(TableReader reader, Scenario& scenario) {
  sim::ComputeEfficiency& efficiency = scenario.efficiency;
  if (auto matmul = reader.optional_fraction("matmul_efficiency")) efficiency.matmul = matmul;
  if (auto attention = reader.optional_fraction("attention_efficiency")) efficiency.attention = attention;
  if (auto kernel = reader.choice("attention_kernel", topology::attention_kernel_names())) {
    if (scenario.lowering.model.attention != strategies::AttentionKind::kFlash) {
      reader.fail("attention_kernel", "a fused attention kernel needs model.attention = \"flash\"",
                  "remove compute.attention_kernel, or set model.attention = \"flash\"");
    }
    efficiency.attention_kernel = *topology::attention_kernel(*kernel);
  }
  if (auto memory = reader.optional_fraction("memory_efficiency")) efficiency.memory = memory;
  efficiency.kernel_overhead_s =
      reader.non_negative("kernel_overhead_us", efficiency.kernel_overhead_s / kMicro) * kMicro;
  efficiency.fp32_matmul_on_tf32 = reader.boolean("allow_tf32").value_or(efficiency.fp32_matmul_on_tf32);
  efficiency.matmul_memory_traffic = reader.boolean("matmul_memory_traffic").value_or(efficiency.matmul_memory_traffic);
  efficiency.overlap_slowdown = reader.non_negative("overlap_slowdown", efficiency.overlap_slowdown);
  if (efficiency.overlap_slowdown > kMaxOverlapSlowdown) {
    reader.fail_value("overlap_slowdown",
                      fmt::format("expected at most {}, got {}", kMaxOverlapSlowdown,
                                  efficiency.overlap_slowdown),
                      "a fraction: 0.189 makes an overlapped op 18.9 % slower");
  }
  read_efficiency_by_size(reader, "matmul_efficiency_by_size", "GEMM FLOPs", efficiency.matmul_by_size);
  read_efficiency_by_size(reader, "memory_efficiency_by_size", "bytes moved", efficiency.memory_by_size);
  scenario.step_compute_time_s = reader.optional_positive("step_compute_time_s");
  scenario.layer_compute_time_s = reader.optional_positive("layer_compute_time_s");
  for (const auto& [key, value] : {std::pair{"step_compute_time_s", scenario.step_compute_time_s},
                                   std::pair{"layer_compute_time_s", scenario.layer_compute_time_s}}) {
    if (value && *value > kMaxStepSeconds)
      reader.fail_value(key, fmt::format("expected at most {} s, got {}", kMaxStepSeconds, *value));
    if (value && *value < kMinStatedSeconds) {
      reader.fail_value(key,
                        fmt::format("expected at least {} s, got {}", kMinStatedSeconds, *value),
                        "a stated compute time in seconds: one GPU kernel takes microseconds");
    }
  }
  if (scenario.step_compute_time_s && scenario.layer_compute_time_s) {
    reader.fail("layer_compute_time_s", "give one stated compute time, not both",
                "step_compute_time_s fixes a whole step, layer_compute_time_s one unsharded layer");
  }
  reader.finish();
}

std::vector<SweepAxis> read_sweep_axes(TableReader reader, const toml::table* table) {
  std::vector<SweepAxis> axes;
  if (table == nullptr) return axes;
  for (auto&& [key, value] : *table) {
    const std::string name(key.str());
    reader.node(name);
    // An unquoted dotted key (parallel.tp = [1, 2]) is TOML for a table: name the whole key to
    // quote.
    if (const toml::table* nested = value.as_table(); nested != nullptr && !nested->empty()) {
      std::string dotted_name = name;
      for (const toml::table* inner = nested; inner != nullptr && !inner->empty();) {
        const auto first = inner->begin();  // its entry lives in the iterator: keep it named
        dotted_name += "." + std::string(first->first.str());
        inner = first->second.as_table();
      }
      reader.fail(
          name,
          fmt::format("an unquoted dotted key, which TOML reads as the table [sweep.{}]", name),
          fmt::format("quote the scenario key: \"{}\" = [...]", dotted_name));
    }
    const toml::array* values = value.as_array();
    if (values == nullptr || values->empty()) {
      reader.fail(name, "expected a non-empty array of values",
                  fmt::format("e.g. \"{}\" = [1, 2, 4]", name));
    }
    SweepAxis axis{name, {}};
    for (const toml::node& entry : *values) axis.values.push_back(node_text(entry));
    axes.push_back(std::move(axis));
  }
  double points = 1;
  for (const SweepAxis& axis : axes) points *= static_cast<double>(axis.values.size());
  if (points > static_cast<double>(kLargestSweep)) {
    throw ScenarioError(reader.location(), "sweep",
                        fmt::format("{} points (the product of the axes' lengths), more than {}",
                                    points < 1e15 ? fmt::format("{:.0f}", points) : fmt::format("{:.3g}", points),
                                    kLargestSweep),
                        "sweep fewer keys or fewer values at a time");
  }
  return axes;
}

// Limits on the text, checked before toml++ reads it: toml++ recurses once per part of a dotted
// key (a key of ~50,000 parts overflowed the stack) and keeps every string whole.
constexpr std::size_t kMaxKeyParts = 32;        // dtsim's deepest keys have 4 parts
constexpr std::size_t kMaxStringBytes = 65536;  // paths and descriptions fit many times over
const char* const kLimitsHint = "see \"Limits\" in docs/scenario.md";

// Refuses a dotted key of more than kMaxKeyParts parts (in a key or a table header) and a string
// of more than kMaxStringBytes bytes, naming source:line:column (or only `source_name` when the
// text is not the user's as written, e.g. a --set value). A light TOML lexer: comments
// and strings are skipped as toml++ reads them; a run of key parts (bare words or strings)
// joined by dots counts as one dotted key (a float such as 2.5 is a run of two). Anything it
// does not understand it leaves to toml++, which reports syntax errors.
void check_text_limits(std::string_view text, const std::string& source_name, bool with_positions = true) {
  std::size_t line = 1, line_start = 0, parts = 0;
  bool after_part = false, after_dot = false;
  const auto where = [&](std::size_t at) {
    return with_positions ? fmt::format("{}:{}:{}", source_name, line, at - line_start + 1) : source_name;
  };
  const auto is_bare = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; };
  const auto part_ends_at = [&](std::size_t start, std::size_t end) {
    parts = after_dot ? parts + 1 : 1;
    after_part = true;
    after_dot = false;
    if (parts > kMaxKeyParts) {
      throw ScenarioError(where(start), "", fmt::format("a dotted key of more than {} parts", kMaxKeyParts), kLimitsHint);
    }
    return end;
  };
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      line_start = ++i;
      parts = 0;
      after_part = after_dot = false;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
    } else if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (c == '.' && after_part) {
      after_part = false;
      after_dot = true;
      ++i;
    } else if (c == '"' || c == '\'') {
      const std::size_t start = i, start_line = line, start_line_start = line_start;
      const std::string triple(3, c);
      const bool multiline = text.compare(i, 3, triple) == 0;
      i += multiline ? 3 : 1;
      const std::size_t content = i;
      while (i < text.size() && !(multiline ? text.compare(i, 3, triple) == 0 : text[i] == c || text[i] == '\n')) {
        if (text[i] == '\\' && c == '"') ++i;  // an escaped character
        if (i < text.size() && text[i] == '\n') {
          ++line;
          line_start = i + 1;
        }
        ++i;
      }
      // Up to two quotes before a closing triple belong to the string ("""a"""" is a").
      for (int extra = 0; multiline && extra < 2 && i + 3 < text.size() && text[i + 3] == c; ++extra) ++i;
      const bool closed = i < text.size() && text[i] == c;  // else unterminated: toml++ says so
      if (i - content > kMaxStringBytes) {
        line = start_line;
        line_start = start_line_start;
        throw ScenarioError(where(start), "",
                            fmt::format("a string of {} bytes; at most {} are read", i - content, kMaxStringBytes),
                            kLimitsHint);
      }
      i = part_ends_at(start, closed ? i + (multiline ? 3 : 1) : i);
    } else if (is_bare(c)) {
      const std::size_t start = i;
      while (i < text.size() && is_bare(text[i])) ++i;
      i = part_ends_at(start, i);
    } else {
      parts = 0;
      after_part = after_dot = false;
      ++i;
    }
  }
}

// Inserts `value` (a toml::value<T>, table or array) at a dotted path, creating tables on
// the way; the value and the first table it created are located at `origin` in errors (the
// tables below that one take their location from it). Linear in the key's length.
template <typename Node>
void assign(toml::table& root, const std::string& dotted_key, Node&& value, const std::string& origin,
            Origins& origins) {
  if (dotted_key.empty() || dotted_key.front() == '.' || dotted_key.back() == '.' ||
      dotted_key.find("..") != std::string::npos) {
    throw ScenarioError(origin, dotted_key, "a dotted key with an empty part", "e.g. ddp.bucket_cap_mb");
  }
  if (static_cast<std::size_t>(std::count(dotted_key.begin(), dotted_key.end(), '.')) >= kMaxKeyParts) {
    throw ScenarioError(origin, dotted_key, fmt::format("a dotted key of more than {} parts", kMaxKeyParts), kLimitsHint);
  }
  toml::table* table = &root;
  bool created = false;
  std::size_t start = 0;
  for (std::size_t dot = dotted_key.find('.'); dot != std::string::npos;
       start = dot + 1, dot = dotted_key.find('.', start)) {
    const std::string part = dotted_key.substr(start, dot - start);
    toml::node* child = table->get(part);
    if (child == nullptr) {
      table->insert(part, toml::table{});
      child = table->get(part);
      if (!created) origins[dotted_key.substr(0, dot)] = origin;
      created = true;
    }
    if (!child->is_table()) {
      throw ScenarioError(origin, dotted_key.substr(0, dot), "is a value, not a table",
                          "a dotted key names a value inside tables");
    }
    table = child->as_table();
  }
  table->insert_or_assign(dotted_key.substr(start), std::forward<Node>(value));
  origins[dotted_key] = origin;
}

}  // namespace

struct ScenarioDocument::State {
  toml::table root;
  std::shared_ptr<const toml::table> as_written;  // the file as parsed, with its source positions
  std::string file;
  Origins origins;
  std::map<std::string, std::string> command_line_axes;  // [sweep] key → its --sweep text
  std::vector<std::string> overrides;  // key=value applied over the file, in order (provenance)
  std::string hardware_profile;        // the profile taken in, as named; empty: none
};

namespace {

// "ORIGIN: " for a key set by --set or a sweep point, "FILE:LINE:COLUMN: " for one the file
// states, else empty.
std::string where_stated(const std::string& key, const toml::table& root,
                         const toml::table* as_written, const std::string& file,
                         const Origins& origins) {
  if (const auto origin = origins.find(key); origin != origins.end()) return origin->second + ": ";
  const std::string position = file_position(root.at_path(key).node(), as_written, key, file);
  return position.empty() ? "" : position + ": ";
}

// Keys the scenario states that the rest of it leaves without effect — [zero] under DDP, the
// LogP overheads under the NCCL library model, an SGD momentum under AdamW: one warning each,
// naming the key, where it was set and what makes it inert. Warnings, not errors: a file may
// state them for the points of a sweep that uses them.
std::vector<std::string> inert_keys(const Scenario& scenario, const toml::table& root,
                                    const toml::table* as_written, const std::string& file,
                                    const Origins& origins) {
  const strategies::ParallelSpec& parallel = scenario.lowering.parallel;
  const std::string strategy = fmt::format("parallel.strategy is \"{}\"", parallel.strategy);
  const bool logp_priced =
      scenario.network.model == "analytic" && scenario.network.library == "ideal";
  const std::string logp_why =
      "LogP overheads price the analytic network model's transfers under collectives.library = "
      "\"ideal\" only";
  struct Rule {
    std::string key;  // a key, or a table whose every key it covers
    bool inert;
    std::string why;
  };
  const std::vector<Rule> rules = {
      {"zero", parallel.strategy != "zero", strategy},
      {"fsdp", parallel.strategy == "ddp" || parallel.strategy == "ps", strategy},
      {"ps", parallel.strategy != "ps", strategy},
      {"fsdp.min_num_params",
       parallel.strategy != "ddp" && parallel.strategy != "ps" &&
           scenario.lowering.fsdp.min_num_params == 0,
       "fsdp.auto_wrap_policy is \"transformer_layer\", not \"size_based\""},
      {"training.sgd_momentum",
       scenario.lowering.training.optimizer != strategies::OptimizerKind::kSgd,
       fmt::format("training.optimizer is \"{}\"",
                   strategies::name_of(scenario.lowering.training.optimizer))},
      {"ddp.gradient_as_bucket_view", parallel.strategy == "fsdp",
       strategy + ": FSDP reduces each unit's gradient where it lies, with no bucket copy"},
      {"parallel.cp_scheme", parallel.cp == 1, "parallel.cp is 1"},
      {"parallel.account_for_embedding_in_pipeline_split", parallel.pp == 1, "parallel.pp is 1"},
      {"parallel.account_for_loss_in_pipeline_split", parallel.pp == 1, "parallel.pp is 1"},
      {"parallel.pipeline_scatter_gather", parallel.pp == 1, "parallel.pp is 1"},
      {"parallel.pipeline_p2p_blocking", parallel.pp == 1, "parallel.pp is 1"},
      {"parallel.pipeline_schedule",
       parallel.pp == 1 && parallel.schedule == strategies::PipelineSchedule::kGPipe,
       "parallel.pp is 1"},
      {"stragglers.sigma", scenario.stragglers.distribution != "lognormal",
       fmt::format("stragglers.distribution is \"{}\", not \"lognormal\"",
                   scenario.stragglers.distribution)},
      {"stragglers.spread", scenario.stragglers.distribution != "uniform",
       fmt::format("stragglers.distribution is \"{}\", not \"uniform\"",
                   scenario.stragglers.distribution)},
      {"stragglers.seed", scenario.stragglers.distribution == "none",
       "stragglers.distribution is \"none\""},
      {"network.logp", !logp_priced, logp_why},
      {"network.logp_overhead_us", !logp_priced, logp_why},
      {"network.logp_gap_us", !logp_priced, logp_why},
  };
  std::vector<std::string> warnings;
  // A switch stated off is in effect wherever it is (search writes zero.overlap_param_gather into
  // every layout it proposes, off where the layout cannot run it).
  const auto warn = [&](const std::string& key, const toml::node& value, const std::string& why) {
    if (value.is_boolean() && !value.as_boolean()->get()) return;
    warnings.push_back(fmt::format("{}{} has no effect: {}",
                                   where_stated(key, root, as_written, file, origins), key, why));
  };
  for (const Rule& rule : rules) {
    if (!rule.inert) continue;
    const toml::node* node = root.at_path(rule.key).node();
    if (node == nullptr) continue;
    if (const toml::table* table = node->as_table()) {
      for (auto&& [key, value] : *table)
        warn(rule.key + "." + std::string(key.str()), value, rule.why);
    } else {
      warn(rule.key, *node, rule.why);
    }
  }
  return warnings;
}

// Values that read well but no hardware has — a GPU memory given in bytes where GB are asked
// for, a NIC in Gb/s where GB/s are: one warning each, naming the key, where it was set and the
// range real hardware spans (2026: GPUs of 16–288 GB and 100–2,500 bf16 TFLOP/s, NICs of
// 10–1,600 Gb/s, NVLink up to 1,800 GB/s per GPU).
std::vector<std::string> implausible_values(const topology::ClusterSpec& cluster,
                                            const toml::table& root, const toml::table* as_written,
                                            const std::string& file, const Origins& origins,
                                            const std::string& hardware_profile) {
  struct Check {
    std::string key;  // the scenario key that sets it (when the scenario sets it: else the preset's)
    double value;     // in the key's unit
    double low, high;
    const char* unit;
  };
  const auto given_as = [&](const std::string& gbyte_key, const std::string& gbit_key, double bytes_per_s) {
    return root.at_path(gbit_key).node() != nullptr ? Check{gbit_key, bytes_per_s * 8 / kGiga, 1, 12800, "Gb/s"}
                                                           : Check{gbyte_key, bytes_per_s / kGiga, 0.125, 1600, "GB/s"};
  };
  const topology::DeviceSpec& gpu = cluster.node.gpu;
  std::vector<Check> checks = {
      {"cluster.gpu.memory_gb", gpu.memory_bytes / kGiga, 4, 1024, "GB"},
      {"cluster.gpu.bf16_tflops", gpu.bf16_flops / kTera, 1, 20000, "TFLOP/s"},
      {"cluster.gpu.memory_bandwidth_gbyte_s", gpu.memory_bandwidth / kGiga, 20, 50000, "GB/s"},
      {"cluster.nvlink.latency_us", cluster.node.nvlink.latency / kMicro, 0, 100, "µs"},
      {"cluster.fabric.nic.latency_us", cluster.fabric.nic.latency / kMicro, 0, 1000, "µs"},
  };
  if (cluster.node.kind != topology::NodeKind::kPcie) {
    checks.push_back(given_as("cluster.nvlink.bandwidth_gbyte_s", "cluster.nvlink.bandwidth_gbit_s", cluster.node.nvlink.bandwidth));
    checks.back().low = cluster.node.kind == topology::NodeKind::kFullMesh ? 1 : 10;  // a mesh link is one of gpus − 1
    checks.back().high = 10000;
  }
  if (cluster.nodes > 1) {
    checks.push_back(given_as("cluster.fabric.nic.bandwidth_gbyte_s", "cluster.fabric.nic.bandwidth_gbit_s", cluster.fabric.nic.bandwidth));
  }
  std::vector<std::string> warnings;
  for (const Check& check : checks) {
    if (check.value >= check.low && check.value <= check.high) continue;
    const auto origin = origins.find(check.key);
    // A measured profile is what this machine is (a CPU core's memory bandwidth is low).
    if (origin != origins.end() && !hardware_profile.empty() &&
        origin->second.find(std::filesystem::path(hardware_profile).filename().string()) !=
            std::string::npos) {
      continue;
    }
    const std::string where = where_stated(check.key, root, as_written, file, origins);
    const bool latency = check.key.ends_with("latency_us");
    warnings.push_back(fmt::format(
        "{}{} = {:g} {} is implausible: real hardware has {:g}–{:g} {} (a value in the wrong "
        "unit?){}",
        where, check.key, check.value, check.unit, check.low, check.high, check.unit,
        latency ? "; under collectives.library = \"nccl\" it prices point-to-point "
                  "transfers only, collectives take NCCL's latencies"
                : ""));
  }
  if (gpu.fp8_flops > 0 && gpu.fp8_flops < gpu.bf16_flops) {
    warnings.push_back(
        fmt::format("{}cluster.gpu.fp8_tflops = {:g} TFLOP/s is below bf16_tflops = {:g}: every "
                    "GPU with FP8 tensor cores "
                    "runs them at twice its bf16 rate (dense)",
                    where_stated("cluster.gpu.fp8_tflops", root, as_written, file, origins),
                    gpu.fp8_flops / kTera, gpu.bf16_flops / kTera));
  }
  return warnings;
}

}  // namespace

ScenarioDocument::ScenarioDocument(std::unique_ptr<State> state) : state_(std::move(state)) {}
ScenarioDocument::ScenarioDocument(ScenarioDocument&&) noexcept = default;
ScenarioDocument& ScenarioDocument::operator=(ScenarioDocument&&) noexcept = default;
ScenarioDocument::~ScenarioDocument() = default;

ScenarioDocument ScenarioDocument::from_string(const std::string& text, const std::string& source_name) {
  auto state = std::make_unique<State>();
  state->file = source_name;
  check_text_limits(text, source_name);
  try {
    state->root = toml::parse(text, source_name);
    state->as_written = std::make_shared<const toml::table>(toml::parse(text, source_name));
  } catch (const toml::parse_error& error) {
    throw ScenarioError(fmt::format("{}:{}:{}", source_name, error.source().begin.line,
                                    error.source().begin.column),
                        "", fmt::format("TOML syntax error: {}", error.description()),
                        "see https://toml.io for the syntax");
  }
  return ScenarioDocument(std::move(state));
}

namespace {

// Copies every value of `profile` whose dotted key the scenario does not set into `root`:
// the scenario's own values win over the profile's.
// A measured curve replaces its scalar key: where the scenario states the scalar itself, the
// profile's curve does not apply.
bool stated_by_scenario(const toml::table& root, const std::string& key) {
  static const std::pair<std::string_view, std::string_view> kCurves[] = {
      {"compute.matmul_efficiency_by_size", "compute.matmul_efficiency"},
      {"compute.memory_efficiency_by_size", "compute.memory_efficiency"}};
  if (root.at_path(key)) return true;
  for (const auto& [curve, scalar] : kCurves) {
    if (key == curve && root.at_path(scalar)) return true;
  }
  return false;
}

// Returns how many values the profile holds.
std::size_t merge_profile(toml::table& root, const toml::table& profile, const std::string& prefix,
                          const std::string& file, Origins& origins) {
  std::size_t values = 0;
  for (const auto& [name, node] : profile) {
    const std::string key = prefix.empty() ? std::string(name.str()) : prefix + "." + std::string(name.str());
    if (const toml::table* table = node.as_table()) {
      values += merge_profile(root, *table, key, file, origins);
      continue;
    }
    ++values;
    if (!stated_by_scenario(root, key)) {
      const std::string origin = fmt::format("{}:{}:{}", file, node.source().begin.line, node.source().begin.column);
      node.visit([&](const auto& value) { assign(root, key, value, origin, origins); });
    }
  }
  return values;
}

// What a hardware profile may set: the hardware ([cluster.gpu], [cluster.nvlink],
// [cluster.fabric.nic] as `dtsim calibrate` writes them) and the compute model's curves.
constexpr std::string_view kProfileTables[] = {"cluster", "compute"};
const char* const kProfileHint =
    "--profile and hardware_profile take the file `dtsim calibrate` writes; a scenario is "
    "the command's first argument";

// A hardware profile (a TOML file of measured hardware keys, as `dtsim calibrate` writes) taken
// in under the scenario's own keys; `location` names where it was asked for.
void merge_profile_file(toml::table& root, const std::filesystem::path& file, const std::string& location,
                        const char* hint, Origins& origins) {
  const auto text = read_input_file(file);
  if (const auto* why = std::get_if<std::string_view>(&text)) {
    throw ScenarioError(location, "scenario.hardware_profile", fmt::format("cannot read {}: {}", file.string(), *why),
                        hint);
  }
  toml::table profile;
  check_text_limits(std::get<std::string>(text), file.string());
  try {
    profile = toml::parse(std::get<std::string>(text), file.string());
  } catch (const toml::parse_error& error) {
    throw ScenarioError(fmt::format("{}:{}:{}", file.string(), error.source().begin.line, error.source().begin.column), "",
                        fmt::format("TOML syntax error: {}", error.description()));
  }
  std::optional<std::pair<std::string, toml::source_position>> foreign;  // the first in the file
  for (const auto& [name, node] : profile) {
    const bool hardware = std::find(std::begin(kProfileTables), std::end(kProfileTables),
                                    name.str()) != std::end(kProfileTables);
    if (!hardware && (!foreign || node.source().begin < foreign->second)) {
      foreign.emplace(std::string(name.str()), node.source().begin);
    }
  }
  if (foreign) {
    throw ScenarioError(
        fmt::format("{}:{}:{}", file.string(), foreign->second.line, foreign->second.column),
        foreign->first, "not a hardware key: a profile sets only [cluster…] and [compute] keys",
        kProfileHint);
  }
  if (merge_profile(root, profile, "", file.string(), origins) == 0) {
    throw ScenarioError(location, "scenario.hardware_profile",
                        fmt::format("{} holds no hardware keys ([cluster.gpu], [cluster.nvlink], "
                                    "[cluster.fabric.nic], [compute])",
                                    file.string()),
                        kProfileHint);
  }
}

// The profile the scenario names: [scenario] hardware_profile = "FILE", relative to the
// scenario. Returns the path as written (empty: none).
std::string apply_hardware_profile(toml::table& root, const std::string& scenario_file, Origins& origins) {
  const toml::node* path_node = root.at_path("scenario.hardware_profile").node();
  if (path_node == nullptr) return {};
  const auto* path = path_node->as_string();
  const std::string location =
      fmt::format("{}:{}:{}", scenario_file, path_node->source().begin.line, path_node->source().begin.column);
  if (path == nullptr) throw ScenarioError(location, "scenario.hardware_profile", "expected the path of a profile TOML");
  merge_profile_file(root, std::filesystem::path(scenario_file).parent_path() / path->get(), location,
                     "dtsim calibrate writes one; the path is relative to the scenario", origins);
  return path->get();
}

}  // namespace

ScenarioDocument ScenarioDocument::from_file(const std::string& path, const std::string& hardware_profile) {
  const auto text = read_input_file(path);
  if (const auto* why = std::get_if<std::string_view>(&text)) {
    throw ScenarioError(path, "", fmt::format("cannot read the scenario: {}", *why),
                        "scenarios/ holds examples, e.g. scenarios/default.toml");
  }
  ScenarioDocument document = from_string(std::get<std::string>(text), path);
  State& state = *document.state_;
  if (hardware_profile.empty()) {
    state.hardware_profile = apply_hardware_profile(state.root, path, state.origins);
  } else {  // in place of the one the scenario names
    if (toml::node* meta = state.root.get("scenario"); meta != nullptr && meta->is_table()) {
      meta->as_table()->erase("hardware_profile");
    }
    merge_profile_file(state.root, hardware_profile, "--profile " + hardware_profile,
                       "dtsim calibrate writes one; the path is relative to the current directory", state.origins);
    state.hardware_profile = hardware_profile;
  }
  return document;
}

namespace {

// "key=text" → (key, text), the text no longer than a value may be; `example` shows the form expected.
std::pair<std::string, std::string> split_assignment(const std::string& assignment, const std::string& origin,
                                                     const std::string& expected, const char* example) {
  const std::size_t equals = assignment.find('=');
  if (equals == std::string::npos || equals == 0) {
    throw ScenarioError(origin, "", fmt::format("expected {}, got \"{}\"", expected, assignment), example);
  }
  std::string key = assignment.substr(0, equals);
  std::string text = assignment.substr(equals + 1);
  if (!valid_utf8(assignment)) {
    throw ScenarioError(origin, valid_utf8(key) ? key : "", "not valid UTF-8",
                        "scenario keys and values are UTF-8 text (dtsim's outputs are JSON)");
  }
  if (text.size() > kMaxStringBytes) {
    throw ScenarioError(origin, key, fmt::format("a value of {} bytes; at most {} are read", text.size(), kMaxStringBytes),
                        kLimitsHint);
  }
  return {std::move(key), std::move(text)};
}

// "a, b,c" → "a", "b", "c": the comma-separated items of a command-line list, spaces around
// them trimmed (an empty item stays, for the caller to refuse).
std::vector<std::string> comma_separated_items(const std::string& text) {
  std::vector<std::string> items;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    std::string item = text.substr(begin, end - begin);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    items.push_back(std::move(item));
    begin = end + 1;
  }
  return items;
}

// A value given on the command line: TOML (5, 2.5, true, "text", [1, 2]) or, if it does not
// parse as TOML, a bare string.
toml::table parse_value(const std::string& text) {
  try {
    return toml::parse("value = " + text);
  } catch (const toml::parse_error&) {
    return toml::table{{"value", text}};
  }
}

}  // namespace

namespace {

// An inline table over a table of the scenario would replace it whole, dropping its other keys.
void refuse_whole_table(const toml::table& root, const std::string& key, const toml::node& value,
                        const std::string& origin, std::string_view option) {
  const toml::node* existing = root.at_path(key).node();
  const toml::table* table = value.as_table();
  if (table == nullptr || existing == nullptr || !existing->is_table()) return;
  const std::string inner = table->empty() ? "KEY" : std::string(table->begin()->first.str());
  const std::string value_text = table->empty() ? "VALUE" : node_text(table->begin()->second);
  // As the user would write it where the table was given: on the command line or in [sweep].
  const std::string example =
      option == "[sweep]" ? fmt::format("\"{}.{}\" = [{}] in [sweep]", key, inner, value_text)
                          : fmt::format("{} {}.{}={}", option, key, inner, value_text);
  throw ScenarioError(
      origin, key,
      fmt::format("would replace the whole [{}] table, dropping the keys it does not name", key),
      fmt::format("{} the keys inside it one at a time, e.g. {}",
                  option == "--set" ? "set" : "sweep", example));
}

}  // namespace

void ScenarioDocument::set(const std::string& assignment, const std::string& origin) {
  // Named references, not a structured binding: a lambda below uses the key (C++20 lets
  // lambdas capture bindings, clang 15 does not yet).
  const auto parts = split_assignment(assignment, origin, "key=value", "e.g. --set ddp.bucket_cap_mb=50");
  const std::string& key = parts.first;
  const std::string& text = parts.second;
  // One key set twice on the command line (origins "--set k=v"): which value was meant is not
  // for dtsim to guess, as with a key swept twice.
  const auto on_command_line = [](const std::string& where) {
    return where.rfind("--set ", 0) == 0;
  };
  if (const auto earlier = state_->origins.find(key); earlier != state_->origins.end() &&
                                                      on_command_line(earlier->second) &&
                                                      on_command_line(origin)) {
    throw ScenarioError(origin, key, fmt::format("set twice: {} after {}", origin, earlier->second),
                        "give each key one --set");
  }
  // [sweep]'s keys are dotted keys themselves, which a dotted --set key cannot spell.
  if (key == "sweep" || key.rfind("sweep.", 0) == 0) {
    throw ScenarioError(origin, key, "sweep axes are not set with --set",
                        key.size() > 6
                            ? fmt::format("use dtsim sweep --sweep {}=v1,v2,…", key.substr(6))
                            : "use dtsim sweep --sweep KEY=v1,v2,…");
  }
  check_text_limits("value = " + text, origin, /*with_positions=*/false);
  toml::table parsed = parse_value(text);
  refuse_whole_table(state_->root, key, *parsed.get("value"), origin, "--set");
  parsed.get("value")->visit(
      [&](auto& value) { assign(state_->root, key, std::move(value), origin, state_->origins); });
  state_->overrides.push_back(key + "=" + text);
}

void ScenarioDocument::add_sweep_axis(const std::string& assignment, const std::string& origin) {
  auto [key, text] = split_assignment(assignment, origin, "key=value,value,…", "e.g. --sweep parallel.tp=2,4,8");
  const std::string where = origin + " " + assignment;
  if (const auto earlier = state_->command_line_axes.find(key);
      earlier != state_->command_line_axes.end()) {
    throw ScenarioError(origin, key,
                        fmt::format("swept twice: {} after {}", where, earlier->second),
                        "give each key's values in one --sweep, e.g. --sweep parallel.tp=2,4,8");
  }
  check_text_limits("value = [" + text + "]", origin, /*with_positions=*/false);
  toml::array values;
  try {  // the list as one TOML array: 2,4,8 or "a, b","c" or [1,2],[3]
    values = std::move(*toml::parse("value = [" + text + "]").get("value")->as_array());
  } catch (const toml::parse_error&) {  // else each comma-separated item on its own (bare strings)
    for (const std::string& item : comma_separated_items(text)) {
      if (item.empty()) {
        throw ScenarioError(origin, key, fmt::format("an empty value in \"{}\"", text), "e.g. --sweep parallel.tp=2,4,8");
      }
      parse_value(item).get("value")->visit([&](auto& value) { values.push_back(std::move(value)); });
    }
  }
  if (values.empty())
    throw ScenarioError(origin, key, "no values after '='", "e.g. --sweep parallel.tp=2,4,8");
  toml::node* sweep = state_->root.get("sweep");
  if (sweep == nullptr) sweep = state_->root.insert_or_assign("sweep", toml::table{}).first->second.as_table();
  if (!sweep->is_table()) throw ScenarioError(state_->file, "sweep", "expected a table of key = [values]");
  sweep->as_table()->insert_or_assign(key, std::move(values));  // the command line's axis replaces the file's
  state_->command_line_axes[key] = where;
}

ScenarioDocument ScenarioDocument::variant(const std::vector<std::string>& assignments, const std::string& origin) const {
  ScenarioDocument copy(std::make_unique<State>(*state_));
  copy.state_->root.erase("sweep");
  for (const std::string& assignment : assignments) copy.set(assignment, origin);
  return copy;
}

const std::string& ScenarioDocument::file() const { return state_->file; }
const std::vector<std::string>& ScenarioDocument::overrides() const { return state_->overrides; }
const std::string& ScenarioDocument::hardware_profile() const { return state_->hardware_profile; }

std::vector<SweepAxis> ScenarioDocument::sweep_axes() const {
  const toml::node* sweep = state_->root.get("sweep");
  TableReader reader(sweep ? sweep->as_table() : nullptr, "sweep", state_->file, state_->origins,
                     state_->file, state_->as_written.get());
  if (sweep != nullptr && !sweep->is_table()) {
    throw ScenarioError(state_->file, "sweep", "expected a table of key = [values]");
  }
  std::vector<SweepAxis> axes =
      read_sweep_axes(std::move(reader), sweep ? sweep->as_table() : nullptr);
  for (const SweepAxis& axis : axes) {
    const auto command_line = state_->command_line_axes.find(axis.key);
    for (const toml::node& value : *sweep->as_table()->get(axis.key)->as_array()) {
      const std::string origin =
          command_line != state_->command_line_axes.end()
              ? command_line->second
              : fmt::format("{}:{}:{}", state_->file, value.source().begin.line,
                            value.source().begin.column);
      refuse_whole_table(state_->root, axis.key, value, origin,
                         command_line != state_->command_line_axes.end() ? "--sweep" : "[sweep]");
    }
  }
  return axes;
}

std::vector<ScenarioDocument> ScenarioDocument::sweep_points() const {
  const std::vector<SweepAxis> axes = sweep_axes();
  const toml::table* sweep = state_->root.get("sweep") ? state_->root.get("sweep")->as_table() : nullptr;
  std::vector<ScenarioDocument> points;
  std::vector<std::size_t> index(axes.size(), 0);
  while (true) {
    auto state = std::make_unique<State>(*state_);
    state->root.erase("sweep");
    for (std::size_t a = 0; a < axes.size(); ++a) {
      const toml::node& value = *(*sweep->get(axes[a].key)->as_array()).get(index[a]);
      const auto command_line = state_->command_line_axes.find(axes[a].key);
      const std::string origin =
          command_line != state_->command_line_axes.end()
              ? fmt::format("{} ({} = {})", command_line->second, axes[a].key, axes[a].values[index[a]])
              : fmt::format("{}:{}:{} ([sweep] {} = {})", state_->file, value.source().begin.line,
                            value.source().begin.column, axes[a].key, axes[a].values[index[a]]);
      value.visit([&](const auto& copy) { assign(state->root, axes[a].key, copy, origin, state->origins); });
      state->overrides.push_back(axes[a].key + "=" + axes[a].values[index[a]]);
    }
    points.push_back(ScenarioDocument(std::move(state)));
    std::size_t a = axes.size();
    while (a > 0 && ++index[a - 1] == axes[a - 1].values.size()) index[--a] = 0;
    if (a == 0) break;
  }
  return points;
}

namespace {

constexpr double kNoticeableDrop =
    0.01;  // of the expert copies: a capacity factor of 1.0 under Zipf loads drops more

// The share of the tokens' expert copies that a capacity factor drops, averaged over the MoE
// layers (0 without one).
double dropped_expert_share(const strategies::ModelSpec& model) {
  if (!model.moe || !model.moe->capacity_factor) return 0;
  double dropped = 0;
  std::size_t layers = 0;
  for (const std::vector<double>& shares : strategies::expert_routing(model).shares) {
    if (shares.empty()) continue;  // a dense layer
    dropped += 1 - std::accumulate(shares.begin(), shares.end(), 0.0);
    ++layers;
  }
  return layers == 0 ? 0 : dropped / static_cast<double>(layers);
}

}  // namespace

Scenario ScenarioDocument::read() const {
  try {
    return read(/*check_layout=*/true);
  } catch (const ScenarioError&) {
    // A layout rule may break because a misspelt key left a degree at its default (`tpp = 2`):
    // read without the layout rules, every table gets to its end and names an unknown key, or
    // any fault beyond the layout's, first.
    read(/*check_layout=*/false);
    throw;
  }
}

Scenario ScenarioDocument::read_for_layout_choice(std::string* layout_fault) const {
  try {
    return read(/*check_layout=*/true);
  } catch (const ScenarioError& error) {
    Scenario scenario = read(/*check_layout=*/false);  // a fault beyond the layout's is thrown
    *layout_fault = error.what();
    return scenario;
  }
}

Scenario ScenarioDocument::read(bool check_layout) const {
  const State& s = *state_;
  TableReader root(&s.root, "", s.file, s.origins, s.file, s.as_written.get());
  Scenario scenario;
  scenario.source = file();
  scenario.overrides = overrides();
  scenario.hardware_profile = hardware_profile();

  TableReader meta = root.child("scenario");
  scenario.name = meta.text("name").value_or(std::filesystem::path(s.file).stem().string());
  // The name is the default output directory, out/<name>: one plain path component.
  if (!plain_name(scenario.name, "/\\") || scenario.name == "." || scenario.name == "..") {
    meta.fail("name", "expected 1 to 200 characters without '/', '\\' or control characters, not \".\" or \"..\"",
              "the name is the default output directory out/<name>");
  }
  scenario.description = meta.text("description").value_or("");
  meta.text("hardware_profile");  // applied when the file was read (apply_hardware_profile)
  if (s.origins.count("scenario.hardware_profile") != 0) {
    meta.fail("hardware_profile", "a profile is taken in when the file is read: --set and [sweep] cannot change it",
              "write it in the scenario file, or sweep the profile's keys themselves");
  }
  meta.finish();

  scenario.cluster = read_cluster(root.child("cluster"));
  scenario.lowering.model = read_model(root.child("model"));

  TableReader training = root.child("training");
  scenario.lowering.training = read_training(training, scenario.lowering.model);
  if (scenario.lowering.training.precision == strategies::Precision::kFP8 && scenario.cluster.node.gpu.fp8_flops <= 0) {
    const bool zeroed = s.root.at_path("cluster.gpu.fp8_tflops").node() != nullptr;
    training.fail("precision",
                  zeroed
                      ? std::string("fp8 needs FP8 tensor cores, but cluster.gpu.fp8_tflops is 0")
                      : fmt::format("fp8 needs FP8 tensor cores; the {} has none",
                                    scenario.cluster.node.gpu.name),
                  "use precision = \"mixed\" on this GPU, or an H100/H200/L40S node");
  }
  TableReader parallel = root.child("parallel");
  read_parallel(parallel, scenario, check_layout);
  scenario.written_parallel = scenario.lowering.parallel;
  TableReader zero = root.child("zero");
  read_zero(zero, scenario.lowering.zero);
  TableReader fsdp = root.child("fsdp");
  read_fsdp(fsdp, scenario.lowering.fsdp);
  if (check_layout) {
    check_batch(training, scenario.lowering.training, scenario.lowering.parallel.dp);
    check_tensor_parallel_divisibility(parallel, scenario.lowering.model,
                                       scenario.lowering.parallel.tp);
    check_parallel_combination(parallel, fsdp, zero, scenario);
    check_expert_parallel(parallel, zero, scenario);
    check_context_parallel(parallel, scenario);
  } else {
    training.count("gradient_accumulation", 1, 1, kMaxDimension);  // its type still checked
    scenario.lowering.parallel = plain_data_parallel(
        scenario.lowering.parallel, static_cast<std::int32_t>(scenario.cluster.gpu_count()));
  }
  for (TableReader* table : {&training, &parallel, &zero, &fsdp}) table->finish();

  TableReader ps = root.child("ps");
  read_ps(ps, scenario.lowering.ps);
  read_stragglers(root.child("stragglers"), scenario.stragglers, scenario.cluster.gpu_count());
  TableReader network = root.child("network");
  read_network(network, scenario.network, scenario.symmetry);
  check_ps_network_model(ps, network, scenario);
  read_collectives(root.child("collectives"), scenario.collectives, scenario.network.library);
  read_ddp(root.child("ddp"), scenario.lowering.ddp);

  read_compute(root.child("compute"), scenario);
  read_output(root.child("output"), scenario);
  {
    TableReader search = root.child("search");
    scenario.gpu_hour_price = search.optional_positive("gpu_hour_price");
    search.finish();
  }
  {
    TableReader backend = root.child("backend");
    scenario.backend_collectives = backend.choice("collectives", {"mpi", "dtsim"}).value_or("mpi");
    backend.finish();
  }

  const toml::node* sweep = root.node("sweep");
  if (sweep != nullptr && !sweep->is_table()) {
    root.fail("sweep", "expected a table of key = [values]", "write it as [sweep]");
  }
  scenario.sweep = read_sweep_axes(root.child("sweep"), sweep ? sweep->as_table() : nullptr);
  root.finish();
  scenario.warnings = implausible_values(scenario.cluster, s.root, s.as_written.get(), s.file,
                                         s.origins, s.hardware_profile);
  for (std::string& warning : inert_keys(scenario, s.root, s.as_written.get(), s.file, s.origins)) {
    scenario.warnings.push_back(std::move(warning));
  }
  const strategies::ModelSpec& model = scenario.lowering.model;
  // A nominal count rounds the dimensions' own (the chapter's 7e9 for Llama-2-7B's 6.74 B); one
  // far from it may belong to another model, e.g. a file's 7e9 kept under --set model.preset=….
  if (model.parameter_count) {
    const auto real = static_cast<double>(strategies::architecture_parameters(model));
    if (const double ratio = *model.parameter_count / real; ratio < 0.5 || ratio > 2) {
      scenario.warnings.push_back(fmt::format(
          "model.parameter_count = {:g} is {:.3g} × the {} parameters of the model's dimensions: "
          "every "
          "parameter-sized quantity (weights, gradients, optimizer states) is scaled by that",
          *model.parameter_count, ratio, strategies::parameter_count_text(real)));
    }
  }
  if (const auto dropped = dropped_expert_share(model); dropped > kNoticeableDrop) {
    scenario.warnings.push_back(
        fmt::format("model.moe.capacity_factor = {:g} drops {:.1f} % of the tokens' expert copies: "
                    "the MoE layers compute "
                    "only the rest, while MFU counts every token's FLOPs",
                    *model.moe->capacity_factor, 100 * dropped));
  }
  const topology::DeviceSpec& gpu = scenario.cluster.node.gpu;
  const topology::AttentionKernel kernel = scenario.efficiency.attention_kernel;
  if (model.attention == strategies::AttentionKind::kFlash && !scenario.efficiency.attention &&
      !gpu.attention_by_sequence.contains(kernel)) {
    scenario.warnings.push_back(fmt::format(
        "no measured {} attention curve for the {}: fused attention runs at an assumed {:.2f} of "
        "its bf16 peak (set compute.attention_efficiency from a measurement of this GPU)",
        topology::attention_kernel_name(kernel), gpu.name,
        sim::ComputeEfficiency::kUnmeasuredAttention));
  }
  return scenario;
}

std::vector<ValidationCase> read_validation_manifest(const std::string& path) {
  const auto text = read_input_file(path);
  if (const auto* why = std::get_if<std::string_view>(&text)) {
    throw ScenarioError(path, "", fmt::format("cannot read the validation manifest: {}", *why),
                        "tests/validation/cases.toml is dtsim's");
  }
  const ScenarioDocument document = ScenarioDocument::from_string(std::get<std::string>(text), path);
  const ScenarioDocument::State& s = *document.state_;
  TableReader root(&s.root, "", s.file, s.origins, s.file, s.as_written.get());
  const toml::node* cases = root.node("case");
  root.finish();
  if (cases == nullptr || !cases->is_array_of_tables() || cases->as_array()->empty()) {
    root.fail("case", "expected one [[case]] table per published measurement", "see docs/validation.md");
  }
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  std::vector<ValidationCase> out;
  for (const toml::node& node : *cases->as_array()) {
    TableReader reader(node.as_table(), "case", s.file, s.origins,
                       fmt::format("{}:{}:{}", s.file, node.source().begin.line, node.source().begin.column));
    ValidationCase c;
    const auto required_text = [&](std::string_view key) {
      std::optional<std::string> value = reader.text(key);
      if (!value || value->empty()) reader.fail(key, "missing required key (a non-empty string)");
      return *value;
    };
    c.name = required_text("name");
    c.group = reader.choice("group", {"throughput", "collective", "kernel"}).value_or("");
    if (c.group.empty()) reader.fail("group", "missing required key", "\"throughput\", \"collective\" or \"kernel\"");
    c.scenario = (folder / required_text("scenario")).string();
    if (std::error_code error; !std::filesystem::is_regular_file(c.scenario, error)) {
      reader.fail("scenario", fmt::format("no scenario file {}", c.scenario),
                  "a path relative to the manifest's folder");
    }
    const std::vector<std::string> metrics =
        c.group == "throughput"   ? std::vector<std::string>{"megatron_tflops_per_gpu", "tokens_per_second_per_gpu"}
        : c.group == "collective" ? std::vector<std::string>{"bus_bandwidth_gbyte_s", "time_us"}
                                  : std::vector<std::string>{"attention_tflops", "mlp_forward_ms", "mlp_backward_ms"};
    c.metric = reader.choice("metric", metrics).value_or("");
    if (c.metric.empty()) reader.fail("metric", "missing required key", "one of: " + join(metrics));
    const std::optional<double> published = reader.optional_positive("published");
    if (!published) reader.fail("published", "missing required key (the published figure, > 0)");
    c.published = *published;
    c.source = required_text("source");
    c.setup = reader.text("setup").value_or("");
    c.sets_constant = reader.text("sets_constant").value_or("");
    if (c.group == "collective") {
      // A barrier moves no data: it has no bus bandwidth to publish. sendrecv: sendrecv_perf.
      c.op = reader
                 .choice("op", {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
                                "all_to_all", "sendrecv"})
                 .value_or("");
      if (c.op.empty()) reader.fail("op", "missing required key", "e.g. op = \"all_reduce\"");
      c.ranks = static_cast<std::int32_t>(reader.required_count("ranks", kMaxNodes * kMaxPerNode, "e.g. ranks = 8"));
      if (c.ranks < 2)
        reader.fail("ranks", "a collective of one rank moves nothing", "e.g. ranks = 8");
      if (const std::int64_t gpus = load_scenario(c.scenario).cluster.gpu_count(); c.ranks > gpus) {
        reader.fail("ranks",
                    fmt::format("{} ranks do not fit the {} GPUs of {}", c.ranks, gpus, c.scenario),
                    "give the scenario enough nodes (cluster.nodes), or fewer ranks");
      }
      c.bytes = reader.required_count("bytes", std::int64_t{1} << 40, "the message size, e.g. bytes = 1073741824");
      c.algorithm = reader.choice("algorithm", {"ring", "tree", "nvls", "collnet", "nvls_tree"})
                        .value_or("auto");
    }
    reader.finish();
    out.push_back(std::move(c));
  }
  return out;
}

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  ScenarioDocument document = ScenarioDocument::from_file(path);
  for (const std::string& assignment : overrides) document.set(assignment, "--set " + assignment);
  return document.read();
}

std::optional<TraceSelection> parse_trace_selection(const std::string& text, std::string* why) {
  TraceSelection selection = TraceSelection::none();
  const auto fail = [why](std::string reason) {
    if (why != nullptr) *why = std::move(reason);
    return std::nullopt;
  };
  // A rank number: digits only, below kLargestCount.
  const auto rank_of = [](std::string_view digits) -> std::optional<std::int32_t> {
    if (digits.empty() || digits.size() > 10 || digits.find_first_not_of("0123456789") != std::string_view::npos) {
      return std::nullopt;
    }
    const std::int64_t value = std::stoll(std::string(digits));
    if (value >= kLargestCount) return std::nullopt;
    return static_cast<std::int32_t>(value);
  };
  const std::vector<std::string> items = comma_separated_items(text);
  if (items.size() > 1 && std::find(items.begin(), items.end(), "none") != items.end()) {
    return fail("\"none\" traces no rank and cannot be combined with other items");
  }
  for (const std::string& item : items) {
    if (item == "auto") {
      selection.automatic = true;
    } else if (item == "all") {
      selection.all = true;
    } else if (item == "none") {
      continue;
    } else if (item == "first-node") {
      selection.first_node = true;
    } else if (item == "critical") {
      selection.critical = true;
    } else if (const std::size_t dash = item.find('-'); dash != std::string::npos) {
      const auto first = rank_of(std::string_view(item).substr(0, dash));
      const auto last = rank_of(std::string_view(item).substr(dash + 1));
      if (!first || !last || *last < *first) return fail(fmt::format("\"{}\" is not a range A-B of ranks, A ≤ B", item));
      selection.ranges.emplace_back(*first, *last);
    } else if (const auto rank = rank_of(item)) {
      selection.ranges.emplace_back(*rank, *rank);
    } else {
      return fail(fmt::format("\"{}\" is neither a rank, a range A-B, auto, all, none, first-node nor critical", item));
    }
  }
  return selection;
}

constexpr std::uintmax_t kLargestInputFile = 64u << 20;
std::variant<std::string, std::string_view> read_input_file(const std::filesystem::path& path) {
  // The outputs (JSON) name the files they come from, and JSON holds UTF-8 only.
  if (!valid_utf8(path.native())) return std::string_view("its name is not valid UTF-8: rename it");
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    return std::string_view(std::filesystem::exists(path, error) ? "not a regular file"
                                                                 : "no such file");
  }
  if (std::filesystem::file_size(path, error) > kLargestInputFile)
    return std::string_view("larger than 64 MiB");
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in.good() && !in.eof()) return std::string_view("cannot be read");
  return text.str();
}

}  // namespace scenarios
