// Chrome trace: the written JSON has the structure Perfetto expects, and reading it back
// restores the timeline; foreign and broken traces are handled.
#include "sim/trace/chrome_trace.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/support/temporary_directory.h"

namespace {

trace::Timeline sample_timeline() {
  trace::Timeline timeline;
  timeline.title = "sample";
  timeline.metadata["scenario"] = "x.toml";
  timeline.ranks = {{"rank 0 (node 0, gpu 0)", 0}, {"rank 1 (node 1, gpu 0)", 1}};
  timeline.streams = {"compute", "comm"};
  timeline.memory_series = {"parameters", "activations"};
  auto add = [&](std::int32_t rank, std::uint16_t stream, trace::Category category,
                 const char* name, std::int64_t start, std::int64_t end) -> trace::Span& {
    trace::Span span;
    span.rank = rank;
    span.stream = stream;
    span.category = category;
    span.name = timeline.strings.intern(name);
    span.start_ps = start;
    span.end_ps = end;
    timeline.spans.push_back(span);
    return timeline.spans.back();
  };
  add(0, 0, trace::Category::kForward, "layer0.fwd.qkv", 0, 1'234'567).flops = 1.5e12;
  trace::Span& all_reduce = add(0, 1, trace::Category::kAllReduce, "ddp.bucket0.all_reduce",
                                1'000'001, 9'000'000'003);
  all_reduce.bytes = 26'214'400;
  all_reduce.algorithm = timeline.strings.intern("ring");
  all_reduce.group = timeline.strings.intern("dp[0]");
  all_reduce.op = 17;
  add(1, 0, trace::Category::kBackward, "layer0.bwd.qkv.dgrad", 5, 6).op = 3;
  timeline.dependencies = {{1, 3, 0}, {1, 3, 2}};
  timeline.memory.push_back({0, 0, {100, 0}, timeline.strings.intern("parameters")});
  timeline.memory.push_back({0, 7, {100, 55}, timeline.strings.intern("layer0.activations")});
  return timeline;
}

std::string write(const trace::Timeline& timeline) {
  std::ostringstream out;
  trace::write_chrome_trace(timeline, out);
  return out.str();
}

TEST(ChromeTraceTest, WrittenTraceHasPerfettoStructure) {
  const nlohmann::json document = nlohmann::json::parse(write(sample_timeline()));
  ASSERT_TRUE(document.contains("traceEvents"));
  const auto& events = document["traceEvents"];
  std::set<std::int64_t> named_processes;
  std::set<std::pair<std::int64_t, std::int64_t>> named_threads;
  int complete = 0;
  int counters = 0;
  for (const auto& event : events) {
    const std::string phase = event.at("ph");
    if (phase == "M" && event.at("name") == "process_name") named_processes.insert(event.at("pid").get<std::int64_t>());
    if (phase == "M" && event.at("name") == "thread_name") {
      named_threads.insert({event.at("pid").get<std::int64_t>(), event.at("tid").get<std::int64_t>()});
    }
    if (phase == "X") {
      ++complete;
      for (const char* key : {"name", "cat", "pid", "tid", "ts", "dur", "args"}) {
        EXPECT_TRUE(event.contains(key)) << key;
      }
      // Every span's lane is named by metadata.
      EXPECT_TRUE(named_threads.count({event["pid"].get<std::int64_t>(), event["tid"].get<std::int64_t>()}));
    }
    if (phase == "C") ++counters;
  }
  EXPECT_EQ(named_processes, (std::set<std::int64_t>{0, 1}));
  EXPECT_EQ(named_threads.size(), 4u);
  EXPECT_EQ(complete, 3);
  EXPECT_EQ(counters, 2);
  EXPECT_EQ(document["otherData"]["title"], "sample");
}

TEST(ChromeTraceTest, SpanAttributesAreInArgs) {
  const nlohmann::json document = nlohmann::json::parse(write(sample_timeline()));
  for (const auto& event : document["traceEvents"]) {
    if (event["ph"] != "X" || event["name"] != "ddp.bucket0.all_reduce") continue;
    EXPECT_EQ(event["cat"], "all_reduce");
    EXPECT_EQ(event["args"]["bytes"], 26'214'400);
    EXPECT_EQ(event["args"]["algorithm"], "ring");
    EXPECT_EQ(event["args"]["group"], "dp[0]");
    EXPECT_EQ(event["args"]["op"], 17);
    EXPECT_DOUBLE_EQ(event["ts"].get<double>(), 1.000001);        // microseconds
    EXPECT_DOUBLE_EQ(event["dur"].get<double>(), 8999.000002);
    return;
  }
  FAIL() << "all-reduce span not found";
}

TEST(ChromeTraceTest, ReadBackRestoresTheTimelineExactly) {
  const trace::Timeline original = sample_timeline();
  std::istringstream in(write(original));
  const trace::Timeline copy = trace::read_chrome_trace(in);
  EXPECT_EQ(copy.title, original.title);
  EXPECT_EQ(copy.metadata.at("scenario"), "x.toml");
  ASSERT_EQ(copy.ranks.size(), 2u);
  EXPECT_EQ(copy.ranks[1].name, original.ranks[1].name);
  EXPECT_EQ(copy.ranks[1].node, 1);
  EXPECT_EQ(copy.streams, original.streams);
  ASSERT_EQ(copy.spans.size(), original.spans.size());
  for (std::size_t i = 0; i < copy.spans.size(); ++i) {
    const trace::Span& a = original.spans[i];
    const trace::Span& b = copy.spans[i];
    EXPECT_EQ(b.start_ps, a.start_ps);
    EXPECT_EQ(b.end_ps, a.end_ps);
    EXPECT_EQ(b.rank, a.rank);
    EXPECT_EQ(copy.streams[b.stream], original.streams[a.stream]);
    EXPECT_EQ(b.category, a.category);
    EXPECT_EQ(copy.strings.at(b.name), original.strings.at(a.name));
    EXPECT_EQ(b.bytes, a.bytes);
    EXPECT_EQ(b.flops, a.flops);
    EXPECT_EQ(b.op, a.op);
    EXPECT_EQ(copy.strings.at(b.algorithm), original.strings.at(a.algorithm));
    EXPECT_EQ(copy.strings.at(b.group), original.strings.at(a.group));
  }
  EXPECT_EQ(copy.dependencies, original.dependencies);
  EXPECT_EQ(copy.memory_series, original.memory_series);
  ASSERT_EQ(copy.memory.size(), 2u);
  EXPECT_EQ(copy.memory[1].bytes, (std::vector<std::int64_t>{100, 55}));
  EXPECT_EQ(copy.memory[1].time_ps, 7);
  EXPECT_EQ(copy.strings.at(copy.memory[1].cause), "layer0.activations");
}

// A dtsim trace of some of a job's ranks (--trace-ranks) is read with their numbers, the other
// ranks present but untraced, so that it pairs rank by rank with a trace of the whole job: the
// reader renumbered the ranks it held 0, 1, … and rank 1 of the job became rank 0's partner.
TEST(ChromeTraceTest, APartialTraceKeepsTheJobsRankNumbers) {
  trace::Timeline partial = sample_timeline();
  partial.metadata["ranks"] = "4";
  partial.ranks = {{"rank 0 (node 0, gpu 0)", 0},
                   {"rank 1", 0, false},
                   {"rank 2", 1, false},
                   {"rank 3 (node 1, gpu 1)", 1}};
  for (trace::Span& span : partial.spans) span.rank = span.rank == 1 ? 3 : span.rank;
  for (trace::OpDependency& dependency : partial.dependencies) dependency.rank = 3;
  std::istringstream in(write(partial));
  const trace::Timeline copy = trace::read_chrome_trace(in);
  ASSERT_EQ(copy.ranks.size(), 4u);
  EXPECT_TRUE(copy.ranks[0].traced);
  EXPECT_FALSE(copy.ranks[1].traced);
  EXPECT_FALSE(copy.ranks[2].traced);
  EXPECT_TRUE(copy.ranks[3].traced);
  EXPECT_EQ(copy.ranks[3].name, "rank 3 (node 1, gpu 1)");
  EXPECT_EQ(copy.ranks[3].node, 1);
  std::set<std::int32_t> ranks_with_spans;
  for (const trace::Span& span : copy.spans) ranks_with_spans.insert(span.rank);
  EXPECT_EQ(ranks_with_spans, (std::set<std::int32_t>{0, 3}));
  EXPECT_EQ(copy.dependencies.front().rank, 3);
  // Without the job's rank count, or with pids that are not its ranks, pids are numbered in order.
  partial.metadata["ranks"] = "3";
  std::istringstream too_few(write(partial));
  EXPECT_EQ(trace::read_chrome_trace(too_few).ranks.size(), 2u);
  partial.metadata["ranks"] = "4000000000";  // no job is that large: not a count to allocate for
  std::istringstream too_many(write(partial));
  EXPECT_EQ(trace::read_chrome_trace(too_many).ranks.size(), 2u);
}

TEST(ChromeTraceTest, ReadsForeignTracesWithStringPidsAndBeginEndPairs) {
  std::istringstream in(R"([
    {"ph": "M", "pid": "host", "tid": 7, "name": "thread_name", "args": {"name": "stream 7"}},
    {"ph": "B", "pid": "host", "tid": 7, "name": "ncclKernel_AllReduce", "ts": 10},
    {"ph": "E", "pid": "host", "tid": 7, "ts": 25.5},
    {"ph": "X", "pid": 3, "tid": 1, "name": "gemm", "cat": "kernel", "ts": 1, "dur": 2}
  ])");
  const trace::Timeline timeline = trace::read_chrome_trace(in);
  ASSERT_EQ(timeline.ranks.size(), 2u);  // numeric pids first, then strings
  EXPECT_EQ(timeline.ranks[0].name, "pid 3");
  EXPECT_EQ(timeline.ranks[1].name, "pid host");
  ASSERT_EQ(timeline.spans.size(), 2u);
  const trace::Span& gemm = timeline.spans[0];
  EXPECT_EQ(timeline.strings.at(gemm.name), "gemm");
  EXPECT_EQ(gemm.category, trace::Category::kCompute);  // a GPU kernel, phase unknown
  const trace::Span& nccl = timeline.spans[1];
  EXPECT_EQ(timeline.streams[nccl.stream], "stream 7");
  EXPECT_EQ(nccl.start_ps, 10'000'000);
  EXPECT_EQ(nccl.end_ps, 25'500'000);
}

TEST(ChromeTraceTest, BrokenTracesRaiseAClearError) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"traceEvents\": [", "not valid JSON"},
      {"{\"traceEvents\": [", "the file's 17 bytes end inside the trace: truncated?"},
      {"", "not valid JSON"},
      {"{\"events\": []}", "not a Chrome trace"},
      {"[{\"ph\": \"X\", \"pid\": 0, \"name\": \"a\", \"dur\": 1}]", "\"ts\""},
      {"[{\"ph\": \"X\", \"pid\": 0, \"name\": \"a\", \"ts\": 0, \"dur\": -1}]", "negative"},
      {"[{\"ph\": \"X\", \"pid\": 0, \"name\": \"a\", \"ts\": 0, \"dur\": 1}] x]", "after the end"},
      {"[{\"ph\": \"X\", \"pid\": 0, \"name\": \"a\", \"ts\": 1e20, \"dur\": 1}, {\"ph\": \"X\", "
       "\"pid\": 0, \"ts\": 0, \"dur\": 1}]",
       "100 days"},
      {"[3]", "not an object"},
      {"[{\"ph\": \"X\", \"pid\": 0, \"ts\": 0, \"dur\": 1, \"name\": \"a\"}, {\"ph\": \"X",
       "truncated?"},
      {"\x89PNG\r\n\x1a\n", "not valid JSON"},
  };
  for (const auto& [text, expected] : cases) {
    std::istringstream in(text);
    try {
      trace::read_chrome_trace(in);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const trace::TraceFormatError& error) {
      EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
    }
  }
}

// What Perfetto accepts: numbers as strings, an "E" whose "B" fell before the capture, epoch
// timestamps; counters other than dtsim's memory track are not memory.
TEST(ChromeTraceTest, LenientWhereChromeTracesVary) {
  std::istringstream in(R"([
    {"ph": "E", "pid": 1, "tid": 1, "ts": 1700000000000000.5},
    {"ph": "X", "pid": 1, "tid": 1, "name": "a", "ts": "1700000000000001.5", "dur": "2.5"},
    {"ph": "C", "pid": 1, "name": "gpu_clock_mhz", "ts": 1700000000000002, "args": {"value": 1980}}
  ])");
  const trace::Timeline timeline = trace::read_chrome_trace(in);
  ASSERT_EQ(timeline.spans.size(), 1u);
  EXPECT_EQ(timeline.spans[0].start_ps, 1'500'000);  // from the first timestamp, floored to a µs
  EXPECT_EQ(timeline.spans[0].duration_ps(), 2'500'000);
  EXPECT_EQ(timeline.metadata.at("time_origin_us"), "1700000000000000");
  EXPECT_TRUE(timeline.memory.empty());
}

TEST(ChromeTraceTest, FilesAreReadThroughTheSameChecks) {
  const test_support::TemporaryDirectory scratch("dtsim-chrome-trace");
  const std::string directory = scratch.path().string();
  const std::string trace_path = directory + "/trace.json";
  {
    std::ofstream out(trace_path);
    trace::write_chrome_trace(sample_timeline(), out);
  }
  EXPECT_EQ(trace::read_chrome_trace_file(trace_path).spans.size(), 3u);

  const std::string empty_path = directory + "/empty.json";
  std::ofstream(empty_path).close();
  EXPECT_THROW(trace::read_chrome_trace_file(empty_path), trace::TraceFormatError);
  EXPECT_THROW(trace::read_chrome_trace_file(directory + "/no_such_trace.json"), trace::TraceFormatError);
  EXPECT_THROW(trace::read_chrome_trace_file(directory), trace::TraceFormatError);
}

}  // namespace
