// Chrome trace writer (streamed, one event per line) and reader (nlohmann::json).
#include "sim/trace/chrome_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

namespace trace {
namespace {

using nlohmann::json;

double to_us(std::int64_t ps) { return static_cast<double>(ps) / 1e6; }
std::int64_t to_ps(double us) { return std::llround(us * 1e6); }

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

// Maps the pids and tids of a foreign trace (numbers or strings) onto dense indices.
class LaneMapper {
 public:
  void add(const json& pid) {
    const std::string key = pid.dump();
    if (ranks_.try_emplace(key, 0).second) order_.push_back(key);
  }
  // Called after the first pass: ranks in ascending pid order (numbers numerically).
  void finalize() {
    std::sort(order_.begin(), order_.end(), [](const std::string& a, const std::string& b) {
      const bool a_num = !a.empty() && a.front() != '"';
      const bool b_num = !b.empty() && b.front() != '"';
      if (a_num != b_num) return a_num;
      if (a_num) return std::stod(a) < std::stod(b);
      return a < b;
    });
    for (std::size_t i = 0; i < order_.size(); ++i) {
      ranks_[order_[i]] = static_cast<std::int32_t>(i);
    }
  }
  std::int32_t rank(const json& pid) const { return ranks_.at(pid.dump()); }
  std::size_t rank_count() const { return order_.size(); }
  const std::vector<std::string>& pid_keys() const { return order_; }

 private:
  std::map<std::string, std::int32_t> ranks_;
  std::vector<std::string> order_;
};

std::string json_key_text(const std::string& dumped) {
  if (dumped.size() >= 2 && dumped.front() == '"') return dumped.substr(1, dumped.size() - 2);
  return dumped;
}

double number_field(const json& event, const char* key, std::size_t index) {
  auto it = event.find(key);
  if (it == event.end() || !it->is_number()) {
    throw TraceFormatError("trace event " + std::to_string(index) + " has no numeric \"" + key +
                           "\"");
  }
  return it->get<double>();
}

}  // namespace

Timeline read_chrome_trace(std::istream& in) {
  json document;
  try {
    document = json::parse(in);
  } catch (const json::parse_error& error) {
    throw TraceFormatError(std::string("not valid JSON: ") + error.what());
  }
  const json* events = nullptr;
  if (document.is_array()) {
    events = &document;
  } else if (document.is_object() && document.contains("traceEvents") &&
             document["traceEvents"].is_array()) {
    events = &document["traceEvents"];
  } else {
    throw TraceFormatError("not a Chrome trace: expected an array of events or an object with "
                           "a \"traceEvents\" array");
  }

  Timeline timeline;
  if (document.is_object() && document.contains("otherData") && document["otherData"].is_object()) {
    for (const auto& [key, value] : document["otherData"].items()) {
      if (key == "title" && value.is_string()) {
        timeline.title = value.get<std::string>();
      } else if (key == "memory_series" && value.is_array()) {
        for (const auto& series : value) {
          if (series.is_string()) timeline.memory_series.push_back(series.get<std::string>());
        }
      } else if (key != "generator") {
        timeline.metadata[key] = value.is_string() ? value.get<std::string>() : value.dump();
      }
    }
  }

  LaneMapper lanes;
  for (const json& event : *events) {
    if (event.is_object() && event.contains("pid")) lanes.add(event["pid"]);
  }
  lanes.finalize();
  timeline.ranks.resize(lanes.rank_count());
  for (std::size_t i = 0; i < lanes.rank_count(); ++i) {
    timeline.ranks[i].name = "pid " + json_key_text(lanes.pid_keys()[i]);
    timeline.ranks[i].node = static_cast<std::int32_t>(i);
  }

  std::map<std::pair<std::int32_t, std::string>, std::string> thread_names;
  for (const json& event : *events) {
    if (!event.is_object() || event.value("ph", "") != "M" || !event.contains("pid")) continue;
    const std::int32_t rank = lanes.rank(event["pid"]);
    const std::string name = event.value("name", "");
    const json args = event.value("args", json::object());
    if (name == "process_name" && args.contains("name") && args["name"].is_string()) {
      timeline.ranks[rank].name = args["name"].get<std::string>();
    } else if (name == "process_labels" && args.contains("labels") && args["labels"].is_string()) {
      const std::string labels = args["labels"].get<std::string>();
      if (labels.rfind("node ", 0) == 0) {
        timeline.ranks[rank].node = std::atoi(labels.c_str() + 5);
      }
    } else if (name == "thread_name" && event.contains("tid") && args.contains("name") &&
               args["name"].is_string()) {
      thread_names[{rank, event["tid"].dump()}] = args["name"].get<std::string>();
    }
  }
  auto stream_of = [&](std::int32_t rank, const json& event) -> std::uint16_t {
    const std::string tid = event.contains("tid") ? event["tid"].dump() : "0";
    auto it = thread_names.find({rank, tid});
    return timeline.stream_index(it != thread_names.end() ? it->second
                                                         : "thread " + json_key_text(tid));
  };

  std::map<std::tuple<std::int32_t, std::uint16_t>, std::vector<Span>> open_spans;
  std::size_t index = 0;
  for (const json& event : *events) {
    ++index;
    if (!event.is_object()) {
      throw TraceFormatError("trace event " + std::to_string(index) + " is not an object");
    }
    const std::string phase = event.value("ph", "");
    if (phase != "X" && phase != "B" && phase != "E" && phase != "C") continue;
    if (!event.contains("pid")) {
      throw TraceFormatError("trace event " + std::to_string(index) + " has no \"pid\"");
    }
    const std::int32_t rank = lanes.rank(event["pid"]);
    const std::int64_t ts = to_ps(number_field(event, "ts", index));
    if (phase == "C") {
      const json args = event.value("args", json::object());
      MemorySample sample{rank, ts, {}, 0};
      if (event.contains("dtsim_cause") && event["dtsim_cause"].is_string()) {
        sample.cause = timeline.strings.intern(event["dtsim_cause"].get<std::string>());
      }
      for (const auto& [key, value] : args.items()) {
        if (!value.is_number()) continue;
        auto it = std::find(timeline.memory_series.begin(), timeline.memory_series.end(), key);
        if (it == timeline.memory_series.end()) {
          timeline.memory_series.push_back(key);
          it = timeline.memory_series.end() - 1;
        }
        const auto series = static_cast<std::size_t>(it - timeline.memory_series.begin());
        if (sample.bytes.size() <= series) sample.bytes.resize(series + 1, 0);
        sample.bytes[series] = value.get<std::int64_t>();
      }
      timeline.memory.push_back(std::move(sample));
      continue;
    }
    const std::uint16_t stream = stream_of(rank, event);
    if (phase == "E") {
      auto& stack = open_spans[{rank, stream}];
      if (stack.empty()) {
        throw TraceFormatError("trace event " + std::to_string(index) +
                               " ends a span that was never begun");
      }
      Span span = stack.back();
      stack.pop_back();
      span.end_ps = std::max(ts, span.start_ps);
      timeline.spans.push_back(span);
      continue;
    }
    Span span;
    span.rank = rank;
    span.stream = stream;
    span.start_ps = ts;
    span.name = timeline.strings.intern(event.value("name", ""));
    span.category = category_from_name(event.value("cat", "")).value_or(Category::kOther);
    const json args = event.value("args", json::object());
    if (args.is_object()) {
      if (args.contains("op") && args["op"].is_number_integer()) span.op = args["op"].get<std::int64_t>();
      if (args.contains("bytes") && args["bytes"].is_number()) span.bytes = args["bytes"].get<std::int64_t>();
      if (args.contains("flops") && args["flops"].is_number()) span.flops = args["flops"].get<double>();
      auto text = [&](const char* key, StringId& field) {
        if (args.contains(key) && args[key].is_string()) field = timeline.strings.intern(args[key].get<std::string>());
      };
      text("algorithm", span.algorithm);
      text("group", span.group);
      text("kind", span.kind);
      text("dtype", span.dtype);
      text("shape", span.shape);
    }
    if (phase == "B") {
      open_spans[{rank, stream}].push_back(span);
      continue;
    }
    const double duration_us = number_field(event, "dur", index);
    if (duration_us < 0) {
      throw TraceFormatError("trace event " + std::to_string(index) + " has a negative duration");
    }
    span.end_ps = ts + to_ps(duration_us);
    timeline.spans.push_back(span);
  }
  std::stable_sort(timeline.spans.begin(), timeline.spans.end(), [](const Span& a, const Span& b) {
    return std::tie(a.rank, a.stream, a.start_ps) < std::tie(b.rank, b.stream, b.start_ps);
  });
  return timeline;
}

Timeline read_chrome_trace_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw TraceFormatError("cannot open " + path);
  return read_chrome_trace(in);
}

}  // namespace trace
