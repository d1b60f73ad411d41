// backend::execute and the MPI session: the part of a real run both executors share (see
// backend/executor.h and backend/job.h).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <mpi.h>

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "backend/executor.h"
#include "backend/job.h"

namespace backend {

MpiSession::MpiSession(int* argc, char*** argv) {
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (rank_ == 0) std::fprintf(stderr, "dtsim: this MPI library does not provide MPI_THREAD_MULTIPLE\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

MpiSession::~MpiSession() { MPI_Finalize(); }

const char* fault_kind_name(ExecutionOptions::Fault::Kind kind) {
  switch (kind) {
    case ExecutionOptions::Fault::Kind::kHang: return "hang";
    case ExecutionOptions::Fault::Kind::kCrash: return "crash";
    case ExecutionOptions::Fault::Kind::kOutOfMemory: return "oom";
    case ExecutionOptions::Fault::Kind::kCorrupt: return "corrupt";
  }
  return "?";
}

ExecutionOptions::Fault parse_fault(const std::string& text) {
  const std::size_t first = text.find(':');
  const std::size_t second = first == std::string::npos ? first : text.find(':', first + 1);
  const auto malformed = [&] {
    return ExecutionError(fmt::format(
        "--inject-fault {}: expected KIND:RANK:OP with KIND hang, crash, oom or corrupt, e.g. hang:1:ddp.bucket0.all_reduce",
        text));
  };
  if (second == std::string::npos || second + 1 == text.size()) throw malformed();
  ExecutionOptions::Fault fault;
  const std::string kind = text.substr(0, first);
  bool known = false;
  for (const auto candidate : {ExecutionOptions::Fault::Kind::kHang, ExecutionOptions::Fault::Kind::kCrash,
                               ExecutionOptions::Fault::Kind::kOutOfMemory, ExecutionOptions::Fault::Kind::kCorrupt}) {
    if (kind == fault_kind_name(candidate)) {
      fault.kind = candidate;
      known = true;
    }
  }
  const std::string rank = text.substr(first + 1, second - first - 1);
  const auto [end, error] = std::from_chars(rank.data(), rank.data() + rank.size(), fault.rank);
  if (!known || error != std::errc() || end != rank.data() + rank.size()) throw malformed();
  fault.op = text.substr(second + 1);
  return fault;
}

trace::Timeline execute(const program::Program& program, const ExecutionOptions& options) {
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);  // errors name the op
  const std::vector<std::int32_t> nodes = job::nodes_of_ranks(options.timeout_s);
  const std::unique_ptr<job::RankRunner> runner = options.device == ExecutionOptions::Device::kGpu
                                                      ? job::gpu_runner(program, options, nodes)
                                                      : job::cpu_runner(program, options, nodes);
  for (int run = 0; run < options.warmup_runs; ++run) runner->run(options.verify && run == 0);
  std::vector<job::RankRecord> records;
  std::vector<double> host_seconds;
  for (int run = 0; run < std::max(options.measured_runs, 1); ++run) {
    records.push_back(runner->run(options.verify && options.warmup_runs == 0 && run == 0));
    host_seconds.push_back(records.back().host_seconds);
  }
  const std::vector<double> host_run_s = job::max_over_ranks(host_seconds, options.timeout_s);
  const std::size_t median = job::agreed_median_index(host_run_s, options.timeout_s);
  const std::string verified =
      options.verify ? job::verify_results(program, options, runner->results_checked()) : "";
  trace::Timeline timeline = job::gather_timeline(program, records[median].timings, nodes, options);
  if (timeline.ranks.empty()) return timeline;  // not rank 0
  timeline.metadata["executed_on"] = runner->description();
  timeline.metadata["host_run_time_s"] = fmt::format("{:.17g}", host_run_s[median]);
  timeline.metadata["host_run_times_s"] = fmt::format("{:.17g}", fmt::join(host_run_s, ","));
  if (!verified.empty()) timeline.metadata["verification"] = verified;
  return timeline;
}

}  // namespace backend
