// Chrome trace writer (streamed, one event per line) and reader (simdjson, for speed: a
// million-span trace loads in about a second).
#include "sim/trace/chrome_trace.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <limits>
#include <numeric>
#include <optional>
#include <simdjson.h>
#include <string_view>
#include <tuple>
#include <ostream>
#include <sstream>

namespace trace {
namespace {

using nlohmann::json;

double to_us(std::int64_t ps) { return static_cast<double>(ps) / 1e6; }

// A JSON string literal, escaped by nlohmann::json.
std::string json_string(std::string_view text) { return json(text).dump(); }

}  // namespace

// Metadata events are built as json objects; spans and counters, which are many, are
// formatted directly, each distinct string escaped once.
void write_chrome_trace(const Timeline& timeline, std::ostream& out) {
  json other = json::object();
  other["generator"] = "dtsim";
  other["title"] = timeline.title;
  other["memory_series"] = timeline.memory_series;  // JSON objects lose the series order
  for (const auto& [key, value] : timeline.metadata) other[key] = value;
  fmt::memory_buffer buffer;
  auto it = fmt::appender(buffer);
  auto flush = [&] {
    out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    buffer.clear();
  };
  fmt::format_to(it, R"({{"displayTimeUnit":"ns","otherData":{},"traceEvents":[)", other.dump());
  bool first = true;
  auto begin_event = [&] {
    fmt::format_to(it, "{}", first ? "\n" : ",\n");
    first = false;
  };
  auto metadata = [&](const json& event) {
    begin_event();
    fmt::format_to(it, "{}", event.dump());
  };
  for (std::size_t rank = 0; rank < timeline.ranks.size(); ++rank) {
    if (!timeline.ranks[rank].traced) continue;
    const auto pid = static_cast<std::int64_t>(rank);
    metadata({{"ph", "M"}, {"pid", pid}, {"name", "process_name"},
              {"args", {{"name", timeline.ranks[rank].name}}}});
    metadata({{"ph", "M"}, {"pid", pid}, {"name", "process_sort_index"},
              {"args", {{"sort_index", pid}}}});
    metadata({{"ph", "M"}, {"pid", pid}, {"name", "process_labels"},
              {"args", {{"labels", "node " + std::to_string(timeline.ranks[rank].node)}}}});
    for (std::size_t stream = 0; stream < timeline.streams.size(); ++stream) {
      const auto tid = static_cast<std::int64_t>(stream);
      metadata({{"ph", "M"}, {"pid", pid}, {"tid", tid}, {"name", "thread_name"},
                {"args", {{"name", timeline.streams[stream]}}}});
      metadata({{"ph", "M"}, {"pid", pid}, {"tid", tid}, {"name", "thread_sort_index"},
                {"args", {{"sort_index", tid}}}});
    }
  }
  std::vector<std::string> escaped(timeline.strings.size());
  auto string_of = [&](StringId id) -> const std::string& {
    if (escaped[id].empty()) escaped[id] = json_string(timeline.strings.at(id));
    return escaped[id];
  };
  auto by_op = [](const OpDependency& a, const OpDependency& b) { return std::tie(a.rank, a.op) < std::tie(b.rank, b.op); };
  for (const Span& span : timeline.spans) {
    begin_event();
    fmt::format_to(it, R"({{"ph":"X","pid":{},"tid":{},"name":{},"cat":"{}","ts":{},"dur":{},"args":{{)",
                   span.rank, span.stream, string_of(span.name), category_name(span.category),
                   to_us(span.start_ps), to_us(span.duration_ps()));
    const char* separator = "";
    auto field = [&](const char* key, const auto& value) {
      fmt::format_to(it, R"({}"{}":{})", separator, key, value);
      separator = ",";
    };
    if (span.op >= 0) field("op", span.op);
    if (span.bytes != 0) field("bytes", span.bytes);
    if (span.flops != 0) field("flops", span.flops);
    if (span.algorithm != 0) field("algorithm", string_of(span.algorithm));
    if (span.group != 0) field("group", string_of(span.group));
    if (span.kind != 0) field("kind", string_of(span.kind));
    if (span.dtype != 0) field("dtype", string_of(span.dtype));
    if (span.shape != 0) field("shape", string_of(span.shape));
    if (span.op >= 0) {
      const OpDependency key{span.rank, span.op, 0};
      const auto deps_begin = std::lower_bound(timeline.dependencies.begin(), timeline.dependencies.end(), key, by_op);
      const auto deps_end = std::upper_bound(deps_begin, timeline.dependencies.end(), key, by_op);
      if (deps_begin != deps_end) {
        fmt::format_to(it, R"({}"deps":[)", separator);
        for (auto dependency = deps_begin; dependency != deps_end; ++dependency) {
          fmt::format_to(it, "{}{}", dependency == deps_begin ? "" : ",", dependency->after_op);
        }
        fmt::format_to(it, "]");
      }
    }
    fmt::format_to(it, "}}}}");
    if (buffer.size() > (1 << 20)) flush();
  }
  std::vector<std::string> series;
  for (const std::string& name : timeline.memory_series) series.push_back(json_string(name));
  for (const MemorySample& sample : timeline.memory) {
    if (sample.rank < 0 || static_cast<std::size_t>(sample.rank) >= timeline.ranks.size() ||
        !timeline.ranks[sample.rank].traced) {
      continue;
    }
    begin_event();
    fmt::format_to(it, R"({{"ph":"C","pid":{},"name":"memory","ts":{},"args":{{)", sample.rank,
                   to_us(sample.time_ps));
    for (std::size_t i = 0; i < series.size() && i < sample.bytes.size(); ++i) {
      fmt::format_to(it, "{}{}:{}", i == 0 ? "" : ",", series[i], sample.bytes[i]);
    }
    fmt::format_to(it, "}}");
    if (sample.cause != 0) fmt::format_to(it, R"(,"dtsim_cause":{})", string_of(sample.cause));
    fmt::format_to(it, "}}");
    if (buffer.size() > (1 << 20)) flush();
  }
  fmt::format_to(it, "\n]}}\n");
  flush();
}

namespace {

namespace ondemand = simdjson::ondemand;

// A pid or tid, numbers and strings alike; numbers sort first, numerically.
struct LaneKey {
  bool numeric = true;
  double number = 0;
  std::string text;
  auto operator<=>(const LaneKey& other) const {
    if (numeric != other.numeric) return numeric ? std::strong_ordering::less : std::strong_ordering::greater;
    if (numeric) {
      if (number < other.number) return std::strong_ordering::less;
      return number > other.number ? std::strong_ordering::greater : std::strong_ordering::equal;
    }
    return text <=> other.text;
  }
  bool operator==(const LaneKey& other) const = default;
  std::string label() const { return numeric ? fmt::format("{}", number) : text; }
};

LaneKey lane_key(ondemand::value value) {
  if (value.type() == ondemand::json_type::string) return LaneKey{false, 0, std::string(value.get_string().value())};
  return LaneKey{true, value.get_double(), {}};
}

// Kernels of foreign traces (PyTorch profiler, Nsight) whose category says little: NCCL's
// kernels are named after their collective; other GPU kernels (GEMMs, element-wise) are
// compute whose phase the trace does not say.
Category category_of(std::string_view category, std::string_view name) {
  if (const auto known = category_from_name(category)) return *known;
  if (category == "gpu_memcpy") return Category::kMemcpy;
  if (name.find("nccl") == std::string_view::npos) return category == "kernel" ? Category::kCompute : Category::kOther;
  static const std::pair<std::string_view, Category> kNccl[] = {
      {"AllReduce", Category::kAllReduce}, {"AllGather", Category::kAllGather},
      {"ReduceScatter", Category::kReduceScatter}, {"Broadcast", Category::kBroadcast},
      {"Reduce", Category::kReduce}, {"SendRecv", Category::kSendRecv}, {"Send", Category::kSendRecv},
      {"Recv", Category::kSendRecv}, {"AllToAll", Category::kAllToAll}};
  for (const auto& [fragment, mapped] : kNccl) {
    if (name.find(fragment) != std::string_view::npos) return mapped;
  }
  return Category::kOther;
}

// More ranks than any job a scenario describes (16,384 nodes × 576 GPUs): a trace that records
// more is not a dtsim job's, and is not given that many ranks.
constexpr std::size_t kMostJobRanks = std::size_t{1} << 24;
// dtsim's memory counter track; other counters of foreign traces are skipped.
constexpr std::string_view kMemoryCounter = "memory";
// Times beyond this (100 days in picoseconds) do not fit a span's int64 picoseconds safely.
constexpr double kMaxTracePs = 100.0 * 86400 * 1e12;

// One pass over the events (simdjson On-Demand: no document tree is built). Spans and
// samples first get provisional lanes in order of appearance; ranks (pids in ascending order)
// and stream names (from thread_name metadata, which may come anywhere) are settled at the end.
class TraceBuilder {
 public:
  // A dtsim trace spends about 250 bytes per span: reserve for that many.
  // A dtsim span takes ~250 bytes of JSON; reserving for more costs address space only.
  explicit TraceBuilder(std::size_t text_bytes) { timeline_.spans.reserve(text_bytes / 160); }

  void read_other_data(ondemand::object other) {
    for (auto field : other) {
      const std::string_view key = field.unescaped_key();
      ondemand::value value = field.value();
      if (key == "title" && value.type() == ondemand::json_type::string) {
        timeline_.title = std::string(value.get_string().value());
      } else if (key == "memory_series" && value.type() == ondemand::json_type::array) {
        for (auto series : value.get_array()) series_index(series.get_string().value());  // counters may have come first
      } else if (key != "generator" && value.type() == ondemand::json_type::string) {
        timeline_.metadata[std::string(key)] = std::string(value.get_string().value());
      }
    }
  }

  void read_events(ondemand::array events) {
    for (auto element : events) {
      ++index_;
      if (element.type() != ondemand::json_type::object) {
        throw TraceFormatError(fmt::format("trace event {} is not an object", index_));
      }
      read_event(element.get_object());
    }
  }

  Timeline finish() {
    // Ranks: pids in ascending order, or the job's rank numbers where the pids are those.
    std::vector<std::int32_t> rank_of_pid(pids_.size());
    {
      std::vector<std::size_t> order(pids_.size());
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return pids_[a] < pids_[b]; });
      const std::optional<std::size_t> job = job_of_numbered_pids();
      timeline_.ranks.resize(job.value_or(pids_.size()));
      if (job) {  // the ranks it holds no spans of: present, untraced
        for (std::size_t r = 0; r < *job; ++r) {
          timeline_.ranks[r] = {fmt::format("rank {}", r), static_cast<std::int32_t>(r), false};
        }
      }
      for (std::size_t r = 0; r < order.size(); ++r) {
        const std::size_t pid = order[r];
        const auto rank =
            job ? static_cast<std::int32_t>(pids_[pid].number) : static_cast<std::int32_t>(r);
        rank_of_pid[pid] = rank;
        RankInfo& info = timeline_.ranks[static_cast<std::size_t>(rank)];
        info.name = process_names_[pid].empty() ? "pid " + pids_[pid].label() : process_names_[pid];
        info.node = process_nodes_[pid].value_or(rank);
        info.traced = true;
      }
    }
    // Streams: by thread name, shared across ranks.
    std::vector<std::uint16_t> stream_of_lane(lanes_.size());
    for (std::size_t lane = 0; lane < lanes_.size(); ++lane) {
      const std::string& name = thread_names_[lane];
      stream_of_lane[lane] = timeline_.stream_index(name.empty() ? "thread " + lanes_[lane].second.label() : name);
    }
    for (Span& span : timeline_.spans) {
      span.stream = stream_of_lane[span.stream];
      span.rank = rank_of_pid[static_cast<std::size_t>(span.rank)];
    }
    for (MemorySample& sample : timeline_.memory) sample.rank = rank_of_pid[static_cast<std::size_t>(sample.rank)];
    for (OpDependency& dependency : timeline_.dependencies) {
      dependency.rank = rank_of_pid[static_cast<std::size_t>(dependency.rank)];
    }
    std::sort(timeline_.dependencies.begin(), timeline_.dependencies.end());
    timeline_.sort_spans_by_lane();  // dtsim writes them in lane order already: no sort then
    return std::move(timeline_);
  }

 private:
  // A dtsim trace's pids are its job's rank numbers, and it records the job's rank count
  // (metadata "ranks"): one of some of the ranks (--trace-ranks) keeps their numbers, so that it
  // pairs rank by rank with a trace of the whole job. Other traces' pids (a profiler's process
  // ids) number nothing: none then.
  std::optional<std::size_t> job_of_numbered_pids() const {
    const std::optional<std::size_t> job = timeline_.recorded_job_ranks();
    if (!job || *job > kMostJobRanks) return std::nullopt;
    for (const LaneKey& pid : pids_) {
      if (!pid.numeric || !(pid.number >= 0) || pid.number >= static_cast<double>(*job) ||
          pid.number != std::floor(pid.number)) {
        return std::nullopt;
      }
    }
    return job;
  }

  // The fields of one event that matter, as read in one pass over it.
  struct Event {
    std::string_view phase, name, category, cause;
    std::optional<LaneKey> pid;
    LaneKey tid;
    std::optional<double> ts, dur;
    std::optional<ondemand::object> args;
  };

  // A number, or a string holding one (Perfetto accepts both for "ts" and "dur").
  static std::optional<double> number_of(ondemand::value value) {
    if (value.type() == ondemand::json_type::number) return value.get_double();
    if (value.type() != ondemand::json_type::string) return std::nullopt;
    const std::string_view text = value.get_string();
    double number = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return number;
  }

  // Microseconds → integer picoseconds. A trace whose first timestamp is too large for that
  // (epoch microseconds, ~1.7e15) is taken from that timestamp, floored to a microsecond, and
  // the origin is kept in the metadata; other traces (dtsim's) keep their times exactly.
  std::int64_t time_ps(double us, bool is_timestamp = true) {
    if (is_timestamp && !origin_us_) {
      origin_us_ = std::abs(us) * 1e6 < kMaxTracePs ? 0.0 : std::floor(us);
      if (*origin_us_ != 0) timeline_.metadata["time_origin_us"] = fmt::format("{:.0f}", *origin_us_);
    }
    const double ps = (is_timestamp ? us - *origin_us_ : us) * 1e6;
    if (!(std::abs(ps) < kMaxTracePs)) {
      throw TraceFormatError(fmt::format("trace event {}: time {} µs is more than 100 days from the trace's start", index_, us));
    }
    return std::llround(ps);
  }

  void read_event(ondemand::object object) {
    Event event;
    Span span;
    pending_name_.clear();
    pending_labels_.clear();
    numeric_args_.clear();
    pending_deps_.clear();
    for (auto field : object) {
      // Compared raw, not unescaped: a million events' keys stay out of the parser's string buffer.
      const ondemand::raw_json_string key = field.key();
      ondemand::value value = field.value();
      if (key == "ph") {
        event.phase = value.get_string();
      } else if (key == "pid") {
        event.pid = lane_key(value);
      } else if (key == "tid") {
        event.tid = lane_key(value);
      } else if (key == "name") {
        if (value.type() == ondemand::json_type::string) event.name = value.get_string();
      } else if (key == "cat") {
        if (value.type() == ondemand::json_type::string) event.category = value.get_string();
      } else if (key == "ts") {
        event.ts = number_of(value);
      } else if (key == "dur") {
        event.dur = number_of(value);
      } else if (key == "dtsim_cause") {
        if (value.type() == ondemand::json_type::string) event.cause = value.get_string();
      } else if (key == "args" && value.type() == ondemand::json_type::object) {
        // Read in place: On-Demand cannot come back to it. Which fields matter depends on the
        // phase, which may come later, so the numbers are kept for a counter too.
        read_args(value.get_object(), span);
      }
    }
    const std::string_view phase = event.phase;
    if (phase == "M") return metadata(event, span);
    if (phase != "X" && phase != "B" && phase != "E" && phase != "C") return;
    if (!event.pid) throw TraceFormatError(fmt::format("trace event {} has no \"pid\"", index_));
    if (!event.ts) throw TraceFormatError(fmt::format("trace event {} has no numeric \"ts\"", index_));
    const std::int32_t pid = pid_index(*event.pid);
    const std::int64_t ts = time_ps(*event.ts);
    if (phase == "C") {
      if (event.name != kMemoryCounter) return;  // other counters (clocks, utilisation) are not memory
      MemorySample sample;
      for (const auto& [series, bytes] : numeric_args_) {
        const std::size_t index = series_index(series);
        if (sample.bytes.size() <= index) sample.bytes.resize(index + 1, 0);
        sample.bytes[index] = std::llround(bytes);
      }
      sample.rank = pid;
      sample.time_ps = ts;
      if (!event.cause.empty()) sample.cause = timeline_.strings.intern(event.cause);
      timeline_.memory.push_back(std::move(sample));
      return;
    }
    const std::uint16_t lane = lane_index(pid, event.tid);
    if (phase == "E") {
      auto& stack = open_[lane];
      if (stack.empty()) return;  // its "B" fell before the capture began (a ring-buffer trace)
      Span begun = stack.back();
      stack.pop_back();
      begun.end_ps = std::max(ts, begun.start_ps);
      timeline_.spans.push_back(begun);
      return;
    }
    span.rank = pid;  // provisional: settled in finish()
    span.stream = lane;
    span.start_ps = ts;
    span.name = timeline_.strings.intern(event.name);
    span.category = category_of(event.category, event.name);
    if (span.op >= 0) {
      for (const std::int64_t after : pending_deps_) timeline_.dependencies.push_back({pid, span.op, after});  // provisional rank
    }
    if (phase == "B") {
      open_[lane].push_back(span);
      return;
    }
    if (!event.dur) throw TraceFormatError(fmt::format("trace event {} has no numeric \"dur\"", index_));
    if (*event.dur < 0) throw TraceFormatError(fmt::format("trace event {} has a negative duration", index_));
    span.end_ps = ts + time_ps(*event.dur, false);
    timeline_.spans.push_back(span);
  }

  // A span's attributes and a counter's series; metadata names are kept in pending_name_.
  void read_args(ondemand::object args, Span& span) {
    for (auto field : args) {
      const std::string_view key = field.unescaped_key();
      ondemand::value value = field.value();
      const ondemand::json_type type = value.type();
      if (type == ondemand::json_type::number) {
        const double number = value.get_double();
        if (key == "op") span.op = std::llround(number);
        if (key == "bytes") span.bytes = std::llround(number);
        if (key == "flops") span.flops = number;
        numeric_args_.emplace_back(key, number);
      } else if (type == ondemand::json_type::array && key == "deps") {
        for (auto element : value.get_array()) {
          if (element.type() == ondemand::json_type::number) pending_deps_.push_back(std::llround(element.get_double()));
        }
      } else if (type == ondemand::json_type::string) {
        const std::string_view text = value.get_string();
        if (key == "name") pending_name_ = text;
        if (key == "labels") pending_labels_ = text;
        StringId* target = key == "algorithm" ? &span.algorithm
                           : key == "group"   ? &span.group
                           : key == "kind"    ? &span.kind
                           : key == "dtype"   ? &span.dtype
                           : key == "shape"   ? &span.shape
                                              : nullptr;
        if (target != nullptr && !text.empty()) *target = timeline_.strings.intern(text);
      }
    }
  }

  // Series seen in counters, in first-seen order (a dtsim trace lists them in otherData).
  std::size_t series_index(std::string_view key) {
    auto it = std::find(timeline_.memory_series.begin(), timeline_.memory_series.end(), key);
    if (it == timeline_.memory_series.end()) {
      timeline_.memory_series.emplace_back(key);
      it = timeline_.memory_series.end() - 1;
    }
    return static_cast<std::size_t>(it - timeline_.memory_series.begin());
  }

  void metadata(const Event& event, const Span&) {
    if (!event.pid) return;
    const std::int32_t pid = pid_index(*event.pid);
    if (event.name == "process_name" && !pending_name_.empty()) {
      process_names_[pid] = pending_name_;
    } else if (event.name == "process_labels" && pending_labels_.rfind("node ", 0) == 0) {
      process_nodes_[pid] = std::atoi(pending_labels_.substr(5).c_str());
    } else if (event.name == "thread_name" && !pending_name_.empty()) {
      thread_names_[lane_index(pid, event.tid)] = pending_name_;
    }
  }

  std::int32_t pid_index(const LaneKey& key) {
    if (last_pid_ && pids_[*last_pid_] == key) return *last_pid_;
    auto [it, inserted] = pid_indices_.try_emplace(key, static_cast<std::int32_t>(pids_.size()));
    if (inserted) {
      pids_.push_back(key);
      process_names_.emplace_back();
      process_nodes_.emplace_back();
    }
    last_pid_ = it->second;
    return it->second;
  }

  std::uint16_t lane_index(std::int32_t pid, const LaneKey& tid) {
    auto [it, inserted] = lane_indices_.try_emplace({pid, tid}, static_cast<std::uint16_t>(lanes_.size()));
    if (inserted) {
      if (lanes_.size() == std::numeric_limits<std::uint16_t>::max()) {
        throw TraceFormatError("more than 65,535 (process, thread) lanes");
      }
      lanes_.emplace_back(pid, tid);
      thread_names_.emplace_back();
      open_.emplace_back();
    }
    return it->second;
  }

  Timeline timeline_;
  std::size_t index_ = 0;
  std::vector<LaneKey> pids_;
  std::map<LaneKey, std::int32_t> pid_indices_;
  std::optional<std::int32_t> last_pid_;
  std::vector<std::string> process_names_;
  std::vector<std::optional<std::int32_t>> process_nodes_;
  std::vector<std::pair<std::int32_t, LaneKey>> lanes_;
  std::map<std::pair<std::int32_t, LaneKey>, std::uint16_t> lane_indices_;
  std::vector<std::string> thread_names_;
  std::vector<std::vector<Span>> open_;  // per lane: "B" events not yet ended
  std::string pending_name_, pending_labels_;
  std::vector<std::pair<std::string_view, double>> numeric_args_;  // views into the parser's buffer
  std::vector<std::int64_t> pending_deps_;
  std::optional<double> origin_us_;
};

// A file mapped read-only into memory with the zeroed padding simdjson reads past the end:
// the file's pages come straight from the page cache, with no copy and no zero-filled buffer
// (which, for a 200 MB trace, costs more than parsing it). Bytes after the end of the file in
// its last page read as zeros; a padding that crosses into the next page lands on an
// anonymous zero page mapped there first.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    // Non-blocking: opening a FIFO with no writer would otherwise wait forever (fstat refuses it).
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) throw TraceFormatError(std::string("cannot open: ") + std::strerror(errno));
    struct stat status {};
    if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
      ::close(fd);
      throw TraceFormatError("cannot read: not a regular file");
    }
    size_ = static_cast<std::size_t>(status.st_size);
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    capacity_ = (size_ + simdjson::SIMDJSON_PADDING + page - 1) / page * page;
    void* region = ::mmap(nullptr, capacity_, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int failure = region == MAP_FAILED ? errno : 0;
    if (region != MAP_FAILED && size_ > 0 &&
        ::mmap(region, size_, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED) {
      failure = errno;
      ::munmap(region, capacity_);
      region = MAP_FAILED;
    }
    ::close(fd);
    if (region == MAP_FAILED) throw TraceFormatError(std::string("cannot map into memory: ") + std::strerror(failure));
    data_ = static_cast<const char*>(region);
    ::madvise(region, capacity_, MADV_SEQUENTIAL);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile() { ::munmap(const_cast<char*>(data_), capacity_); }
  simdjson::padded_string_view view() const { return simdjson::padded_string_view(data_, size_, capacity_); }

 private:
  const char* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

Timeline parse(simdjson::padded_string_view text) {
  if (text.size() == 0) throw TraceFormatError("not valid JSON: the file is empty");
  try {
    ondemand::parser parser;
    ondemand::document document = parser.iterate(text);
    TraceBuilder builder(text.size());
    if (document.type() == ondemand::json_type::array) {
      builder.read_events(document.get_array());
    } else if (document.type() == ondemand::json_type::object) {
      bool has_events = false;
      for (auto field : document.get_object()) {
        const std::string_view key = field.unescaped_key();
        ondemand::value value = field.value();
        if (key == "traceEvents" && value.type() == ondemand::json_type::array) {
          builder.read_events(value.get_array());
          has_events = true;
        } else if (key == "otherData" && value.type() == ondemand::json_type::object) {
          builder.read_other_data(value.get_object());
        }
      }
      if (!has_events) {
        throw TraceFormatError("not a Chrome trace: expected an array of events or an object with a \"traceEvents\" array");
      }
    } else {
      throw TraceFormatError("not a Chrome trace: expected an array of events or an object with a \"traceEvents\" array");
    }
    if (document.current_location().error() != simdjson::OUT_OF_BOUNDS) {  // OUT_OF_BOUNDS: nothing left
      throw TraceFormatError("not valid JSON: more text after the end of the trace");
    }
    return builder.finish();
  } catch (const simdjson::simdjson_error& error) {
    // A trace cut short (a run still writing it, a copy interrupted) is the usual cause: say so.
    const std::string_view content(text.data(), text.size());
    const std::size_t first = content.find_first_not_of(" \t\r\n");
    const std::size_t last = content.find_last_not_of(" \t\r\n");
    const bool ends_open = first != std::string_view::npos &&
                           (content[first] == '{' || content[first] == '[') &&
                           content[last] != '}' && content[last] != ']';
    throw TraceFormatError(fmt::format(
        "not valid JSON: {}{}", error.what(),
        ends_open
            ? fmt::format(" (the file's {} bytes end inside the trace: truncated?)", text.size())
            : ""));
  }
}

}  // namespace

Timeline read_chrome_trace(std::istream& in) {
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const simdjson::padded_string padded(text);
  return parse(padded);
}

Timeline read_chrome_trace_file(const std::string& path) {
  try {
    const MappedFile file(path);
    return parse(file.view());
  } catch (const TraceFormatError& error) {
    throw TraceFormatError(path + ": " + error.what());
  }
}

}  // namespace trace
