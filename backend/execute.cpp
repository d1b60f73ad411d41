// backend::execute and the MPI session: the part of a real run both executors share (see
// backend/executor.h and backend/job.h).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <mpi.h>

#include <algorithm>
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

ExecutionOptions::Fault parse_fault(const std::string& text) {
  const std::size_t first = text.find(':');
  const std::size_t second = first == std::string::npos ? first : text.find(':', first + 1);
  const char* expected =
      "expected KIND:RANK:OP with KIND hang, crash, oom or corrupt, e.g. hang:1:ddp.bucket0.all_reduce";
  if (second == std::string::npos) throw ExecutionError(fmt::format("--inject-fault {}: {}", text, expected));
  ExecutionOptions::Fault fault;
  const std::string kind = text.substr(0, first);
  if (kind == "hang") {
    fault.kind = ExecutionOptions::Fault::Kind::kHang;
  } else if (kind == "crash") {
    fault.kind = ExecutionOptions::Fault::Kind::kCrash;
  } else if (kind == "oom") {
    fault.kind = ExecutionOptions::Fault::Kind::kOutOfMemory;
  } else if (kind == "corrupt") {
    fault.kind = ExecutionOptions::Fault::Kind::kCorrupt;
  } else {
    throw ExecutionError(fmt::format("--inject-fault {}: {}", text, expected));
  }
  try {
    fault.rank = std::stoi(text.substr(first + 1, second - first - 1));
  } catch (const std::exception&) {
    throw ExecutionError(fmt::format("--inject-fault {}: {}", text, expected));
  }
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
      options.verify ? job::verify_tensor_parallel(program, options, runner->results_checked()) : "";
  trace::Timeline timeline = job::gather_timeline(program, records[median].timings, nodes, options);
  if (timeline.ranks.empty()) return timeline;  // not rank 0
  timeline.metadata["executed_on"] = runner->description();
  timeline.metadata["host_run_time_s"] = fmt::format("{:.17g}", host_run_s[median]);
  timeline.metadata["host_run_times_s"] = fmt::format("{:.17g}", fmt::join(host_run_s, ","));
  if (!verified.empty()) timeline.metadata["verification"] = verified;
  return timeline;
}

}  // namespace backend
