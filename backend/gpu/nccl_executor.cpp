// The GPU executor: a Program run with NCCL, cuBLAS and CUDA streams (see backend/executor.h).
//
// One host thread enqueues the rank's ops in Program order, each on the CUDA stream of its
// Program stream: a dependency on another stream's op becomes cudaStreamWaitEvent on that op's
// end event (same-stream order is the stream's own), so the GPU overlaps what the Program lets
// overlap and the host never blocks. Each op is bracketed by two CUDA events; the spans are
// their times after an origin event every stream waits on, recorded after the common barrier.
//
//  * compute ops: the stand-ins of gpu_kernels.h (cuBLAS GEMMs of the op's shapes and dtype,
//    the memory-pass kernel); host↔device copies as cudaMemcpyAsync from pinned memory;
//    host-side ops (an offloaded optimizer) as the CPU kernel in stream order
//    (cudaLaunchHostFunc);
//  * collectives: NCCL on one communicator per (group family, stream), split from a world
//    communicator (ncclCommSplit) — the n-th collective of a group on a stream then matches the
//    n-th of every member, as on the CPU path; reductions in fp32 (the op's bytes move; the
//    crafted --verify sums stay exact); all-to-all as grouped sends and receives;
//  * point-to-point: ncclSend/ncclRecv on one communicator per (group family, direction), so
//    transfers of one direction match in Program order.
// NCCL_ALGO is set from the scenario before the first communicator (nccl_algorithm.h).
//
// The watchdog: while the run is in flight the host polls the ops' end events and every
// communicator's asynchronous error; an NCCL error, or no op finishing for options.timeout_s,
// aborts the communicators and ends the job naming the oldest unfinished op.
//
// A collective's span starts when its kernel starts, which includes waiting for late peers
// (the CPU path and the simulator start it at the last arrival): docs/backend.md.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

#include "backend/gpu/gpu_job.h"
#include "backend/gpu/gpu_kernels.h"
#include "backend/job.h"
#include "backend/mpi/cpu_kernels.h"
#include "backend/mpi/verification.h"
#include "backend/nccl_algorithm.h"

namespace backend {
namespace {

using program::OpIndex;
using job::Clock;

// Device bytes an op needs: its operands (GEMMs), two buffers (memory passes, collectives), one
// (transfers).
std::int64_t device_bytes(const program::Op& op) {
  if (const auto* compute = std::get_if<program::ComputeOp>(&op.body)) {
    return compute->on_host ? 0 : gpu::compute_scratch_bytes(*compute);
  }
  if (const auto* collective = std::get_if<program::CollectiveOp>(&op.body)) return 2 * std::max<std::int64_t>(collective->bytes, 4);
  if (const auto* p2p = std::get_if<program::SendRecvOp>(&op.body)) return std::max<std::int64_t>(p2p->bytes, 1);
  return 0;
}

// An op run on the host in stream order, and the scratch it uses.
struct HostWork {
  const program::ComputeOp* op = nullptr;
  cpu::Scratch* scratch = nullptr;
};

void CUDART_CB run_on_host(void* work) {
  const auto* host = static_cast<const HostWork*>(work);
  cpu::run_compute(*host->op, *host->scratch);
}

// One Program stream on the GPU: its CUDA stream, cuBLAS handle and device scratch (sized
// before the run to the largest op on it: ops of one stream run one after another).
struct DeviceStream {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  char* scratch = nullptr;
  std::int64_t scratch_bytes = 0;
  cpu::Scratch host_scratch;
};

// What --verify keeps for one collective or transfer: its crafted input and, after the run, its
// result, in pinned host memory.
struct Checked {
  OpIndex op = 0;
  int member = 0;
  int size = 1;
  std::int64_t bytes = 0;
  char* in = nullptr;
  char* out = nullptr;
};

class GpuExecutor final : public job::RankRunner {
 public:
  GpuExecutor(const program::Program& program, const ExecutionOptions& options)
      : program_(program), options_(options), ops_(&program.ranks[static_cast<std::size_t>(rank_)]->ops) {
    job::check_program(program, options, nullptr, "on a GPU", [](const program::Op& op) -> std::string {
      const auto* collective = std::get_if<program::CollectiveOp>(&op.body);
      if (collective != nullptr && (collective->kind == program::CollectiveKind::kPsPush ||
                                    collective->kind == program::CollectiveKind::kPsPull)) {
        return "the GPU executor does not run parameter-server push/pull (NCCL has no servers): use --backend mpi";
      }
      return "";
    });
    if (options.own_schedules) {
      throw ExecutionError("[backend] collectives = \"dtsim\" runs on the CPU path only: NCCL runs its own algorithms "
                           "(fix them with [collectives]; they become NCCL_ALGO)");
    }
    set_nccl_algo();
    connect_at_creation();
    device_name_ = gpu::select_gpu();
    create_communicators();
    create_streams();
  }

  ~GpuExecutor() override {
    for (auto& [key, comm] : comms_) ncclCommDestroy(comm);
    ncclCommDestroy(world_);
    for (const cudaEvent_t event : events_) cudaEventDestroy(event);
    cudaEventDestroy(origin_);
    for (DeviceStream& stream : streams_) {
      cudaFree(stream.scratch);
      if (stream.blas != nullptr) cublasDestroy(stream.blas);
      if (stream.stream != nullptr) cudaStreamDestroy(stream.stream);
    }
    for (const Checked& checked : checked_ops_) {
      cudaFreeHost(checked.in);
      cudaFreeHost(checked.out);
    }
    cudaFreeHost(pinned_);
  }

  job::RankRecord run(bool verifying) override {
    verifying_ = verifying;
    MPI_Request barrier = MPI_REQUEST_NULL;
    MPI_Ibarrier(MPI_COMM_WORLD, &barrier);
    job::wait_for_job(barrier, options_.timeout_s, "the barrier before the run");
    const Clock::time_point start = Clock::now();
    cuda(cudaEventRecord(origin_, streams_.front().stream), "recording the origin event");
    for (DeviceStream& stream : streams_) cuda(cudaStreamWaitEvent(stream.stream, origin_, 0), "waiting for the origin");
    for (OpIndex i = 0; i < ops_->size(); ++i) enqueue(i);
    watch();
    job::RankRecord record;
    record.host_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    for (OpIndex i = 0; i < ops_->size(); ++i) {
      record.timings.push_back({static_cast<std::int64_t>(i), picoseconds(start_event(i)), picoseconds(end_event(i))});
    }
    if (verifying) check_results();
    return record;
  }

  std::int64_t results_checked() const override { return checked_; }

  std::string description() const override {
    int nccl_version = 0;
    ncclGetVersion(&nccl_version);
    return fmt::format("NCCL {}.{}.{} + cuBLAS on {} (one GPU per rank){}", nccl_version / 10000,
                       (nccl_version % 10000) / 100, nccl_version % 100, device_name_,
                       nccl_algo_.empty() ? "" : ", NCCL_ALGO=" + nccl_algo_);
  }

 private:
  [[noreturn]] void fail(const std::string& message) {
    for (auto& [key, comm] : comms_) ncclCommAbort(comm);
    job::fail(rank_, message);
  }

  void cuda(cudaError_t status, const std::string& what) {
    if (status != cudaSuccess) fail(fmt::format("{}: CUDA error: {}", what, cudaGetErrorString(status)));
  }
  void nccl(ncclResult_t status, const program::Op& op) {
    if (status != ncclSuccess && status != ncclInProgress) {
      fail(fmt::format("op '{}': NCCL error: {} ({})", op.name, ncclGetErrorString(status), ncclGetLastError(nullptr)));
    }
  }

  // The scenario's fixed algorithms, as NCCL_ALGO (the same on every rank, so a refusal is too).
  void set_nccl_algo() {
    const auto algorithm = [this](const program::CollectiveOp& op, const std::string& family) {
      return options_.algorithm ? options_.algorithm(op, family) : op.algorithm;
    };
    const std::optional<std::string> setting = nccl_algo_setting(program_, algorithm);
    if (!setting) return;
    if (const char* before = std::getenv("NCCL_ALGO"); before != nullptr && *setting != before && rank_ == 0) {
      std::fprintf(stderr, "dtsim: NCCL_ALGO=%s from the environment is replaced by the scenario's %s\n", before,
                   setting->c_str());
    }
    setenv("NCCL_ALGO", setting->c_str(), 1);
    nccl_algo_ = *setting;
  }

  // NCCL ≥ 2.22 connects a communicator's algorithms at their first use, blocking the host
  // until the peers get there too; this executor enqueues a whole step before it waits, so two
  // ranks whose Programs first use two communicators in opposite orders would wait on each
  // other. Connecting at creation avoids that (unless the user chose otherwise).
  static void connect_at_creation() { setenv("NCCL_RUNTIME_CONNECT", "0", 0); }

  // The world communicator (its unique id broadcast over MPI), then one split per (family,
  // stream) for collectives and per (family, direction) for transfers, in the same order on
  // every rank (ncclCommSplit is collective over the world communicator).
  void create_communicators() {
    world_ = gpu::world_communicator(options_.timeout_s);
    std::vector<std::pair<program::GroupFamilyId, int>> needed;  // (family, stream, or −1/−2 per direction)
    for (const auto& rank : program_.ranks) {
      for (const program::Op& op : rank->ops) {
        if (const auto* collective = std::get_if<program::CollectiveOp>(&op.body)) {
          needed.emplace_back(collective->group, static_cast<int>(op.stream));
        } else if (const auto* p2p = std::get_if<program::SendRecvOp>(&op.body)) {
          needed.emplace_back(p2p->group, direction_key(*p2p));
        }
      }
    }
    std::sort(needed.begin(), needed.end());
    needed.erase(std::unique(needed.begin(), needed.end()), needed.end());
    for (const auto& key : needed) {
      const program::GroupFamily& family = program_.family(key.first);
      const std::int32_t instance = family.instance_of_rank[static_cast<std::size_t>(rank_)];
      ncclComm_t comm = nullptr;
      nccl(ncclCommSplit(world_, instance < 0 ? NCCL_SPLIT_NOCOLOR : instance,
                         instance < 0 ? 0 : family.index_in_instance[static_cast<std::size_t>(rank_)], &comm, nullptr),
           setup_op_);
      if (comm != nullptr) comms_[key] = comm;
    }
  }

  // Transfers towards higher group indices (a send with a positive offset, a receive with a
  // negative one) share one communicator, the other direction another.
  static int direction_key(const program::SendRecvOp& p2p) { return (p2p.peer_offset > 0) == p2p.is_send ? -1 : -2; }

  ncclComm_t comm_of(program::GroupFamilyId family, int key, const program::Op& op) {
    const auto found = comms_.find({family, key});
    if (found == comms_.end()) fail(fmt::format("op '{}': this rank is in no instance of group '{}'", op.name, program_.family(family).name));
    return found->second;
  }

  // CUDA streams, cuBLAS handles, events and device scratch. A failed allocation names the op
  // that needs the most and the bytes asked for.
  void create_streams() {
    streams_.resize(program_.streams.size());
    std::vector<OpIndex> largest(streams_.size(), 0);
    for (OpIndex i = 0; i < ops_->size(); ++i) {
      const program::Op& op = (*ops_)[i];
      DeviceStream& stream = streams_[op.stream];
      if (device_bytes(op) > stream.scratch_bytes) {
        stream.scratch_bytes = device_bytes(op);
        largest[op.stream] = i;
      }
      if (const auto* compute = std::get_if<program::ComputeOp>(&op.body); compute && compute->kind == program::ComputeKind::kMemcpy) {
        pinned_bytes_ = std::max(pinned_bytes_, static_cast<std::int64_t>(compute->bytes));
      }
    }
    for (std::size_t s = 0; s < streams_.size(); ++s) {
      DeviceStream& stream = streams_[s];
      cuda(cudaStreamCreateWithFlags(&stream.stream, cudaStreamNonBlocking), "creating a CUDA stream");
      if (cublasCreate(&stream.blas) != CUBLAS_STATUS_SUCCESS) fail("creating a cuBLAS handle failed");
      cublasSetStream(stream.blas, stream.stream);
      if (stream.scratch_bytes == 0) continue;
      const cudaError_t status = cudaMalloc(&stream.scratch, static_cast<std::size_t>(stream.scratch_bytes));
      if (status != cudaSuccess) {
        fail(fmt::format("op '{}': device out of memory allocating {} bytes ({}) for stream '{}'",
                         (*ops_)[largest[s]].name, stream.scratch_bytes, cudaGetErrorString(status), program_.streams[s]));
      }
      cuda(cudaMemset(stream.scratch, 0, static_cast<std::size_t>(stream.scratch_bytes)), "clearing scratch memory");
    }
    if (pinned_bytes_ > 0) cuda(cudaMallocHost(&pinned_, static_cast<std::size_t>(pinned_bytes_)), "allocating pinned memory");
    events_.resize(2 * ops_->size());
    for (cudaEvent_t& event : events_) cuda(cudaEventCreate(&event), "creating CUDA events");
    cuda(cudaEventCreate(&origin_), "creating CUDA events");
    host_work_.resize(ops_->size());
  }

  cudaEvent_t start_event(OpIndex op) const { return events_[2 * op]; }
  cudaEvent_t end_event(OpIndex op) const { return events_[2 * op + 1]; }

  std::int64_t picoseconds(cudaEvent_t event) {
    float ms = 0;
    cuda(cudaEventElapsedTime(&ms, origin_, event), "reading a CUDA event");
    return static_cast<std::int64_t>(static_cast<double>(ms) * 1e9);
  }

  void enqueue(OpIndex index) {
    const program::Op& op = (*ops_)[index];
    DeviceStream& stream = streams_[op.stream];
    for (const OpIndex dependency : op.deps) {
      if ((*ops_)[dependency].stream != op.stream) {
        cuda(cudaStreamWaitEvent(stream.stream, end_event(dependency), 0), fmt::format("op '{}': waiting for its dependency", op.name));
      }
    }
    try {
      faults_.at_start(op);
    } catch (const std::bad_alloc&) {
      fail(fmt::format("op '{}': device out of memory allocating {} bytes (injected)", op.name, device_bytes(op)));
    }
    if (verifying_) prepare_check(index, stream);
    cuda(cudaEventRecord(start_event(index), stream.stream), "recording an event");
    if (const auto* compute = std::get_if<program::ComputeOp>(&op.body)) run_compute(index, *compute, stream);
    if (const auto* collective = std::get_if<program::CollectiveOp>(&op.body)) run_collective(*collective, op, stream);
    if (const auto* p2p = std::get_if<program::SendRecvOp>(&op.body)) run_send_recv(*p2p, op, stream);
    cuda(cudaEventRecord(end_event(index), stream.stream), "recording an event");
    if (verifying_) keep_result(index, stream);
  }

  void run_compute(OpIndex index, const program::ComputeOp& compute, DeviceStream& stream) {
    const program::Op& op = (*ops_)[index];
    if (compute.on_host) {
      host_work_[index] = {&compute, &stream.host_scratch};
      cuda(cudaLaunchHostFunc(stream.stream, run_on_host, &host_work_[index]), fmt::format("op '{}'", op.name));
      return;
    }
    if (compute.kind == program::ComputeKind::kMemcpy) {
      const auto bytes = static_cast<std::size_t>(compute.bytes);
      const bool to_host = program_.streams[op.stream].find("device_to_host") != std::string::npos;
      cuda(to_host ? cudaMemcpyAsync(pinned_, stream.scratch, bytes, cudaMemcpyDeviceToHost, stream.stream)
                   : cudaMemcpyAsync(stream.scratch, pinned_, bytes, cudaMemcpyHostToDevice, stream.stream),
           fmt::format("op '{}'", op.name));
      return;
    }
    if (const std::string error = gpu::enqueue_compute(compute, stream.blas, stream.stream, stream.scratch); !error.empty()) {
      fail(fmt::format("op '{}': {}", op.name, error));
    }
  }

  // The collective's input and output halves of the stream's scratch.
  static std::pair<char*, char*> halves(const DeviceStream& stream, std::int64_t bytes) {
    return {stream.scratch, stream.scratch + std::max<std::int64_t>(bytes, 4)};
  }

  void run_collective(const program::CollectiveOp& collective, const program::Op& op, DeviceStream& stream) {
    const ncclComm_t comm = comm_of(collective.group, static_cast<int>(op.stream), op);
    int size = 1, member = 0;
    nccl(ncclCommCount(comm, &size), op);
    nccl(ncclCommUserRank(comm, &member), op);
    const auto [in, out] = halves(stream, collective.bytes);
    const auto floats = static_cast<std::size_t>(collective.bytes / 4);
    const auto share = static_cast<std::size_t>(collective.bytes / size);
    switch (collective.kind) {
      case program::CollectiveKind::kAllReduce:
        nccl(ncclAllReduce(in, out, floats, ncclFloat, ncclSum, comm, stream.stream), op);
        break;
      case program::CollectiveKind::kAllGather:
        nccl(ncclAllGather(in, out, share, ncclInt8, comm, stream.stream), op);
        break;
      case program::CollectiveKind::kReduceScatter:
        nccl(ncclReduceScatter(in, out, floats / static_cast<std::size_t>(size), ncclFloat, ncclSum, comm, stream.stream), op);
        break;
      case program::CollectiveKind::kBroadcast:
        nccl(ncclBroadcast(in, in, static_cast<std::size_t>(collective.bytes), ncclInt8, collective.root, comm, stream.stream), op);
        break;
      case program::CollectiveKind::kReduce:
        nccl(ncclReduce(in, out, floats, ncclFloat, ncclSum, collective.root, comm, stream.stream), op);
        break;
      case program::CollectiveKind::kAllToAll:
        nccl(ncclGroupStart(), op);
        for (int peer = 0; peer < size; ++peer) {
          nccl(ncclSend(in + peer * share, share, ncclInt8, peer, comm, stream.stream), op);
          nccl(ncclRecv(out + peer * share, share, ncclInt8, peer, comm, stream.stream), op);
        }
        nccl(ncclGroupEnd(), op);
        break;
      case program::CollectiveKind::kBarrier:
        nccl(ncclAllReduce(in, out, 1, ncclFloat, ncclSum, comm, stream.stream), op);
        break;
      case program::CollectiveKind::kPsPush:
      case program::CollectiveKind::kPsPull:
        break;  // refused up front
    }
  }

  void run_send_recv(const program::SendRecvOp& p2p, const program::Op& op, DeviceStream& stream) {
    const ncclComm_t comm = comm_of(p2p.group, direction_key(p2p), op);
    int size = 1, me = 0;
    nccl(ncclCommCount(comm, &size), op);
    nccl(ncclCommUserRank(comm, &me), op);
    const int peer = me + p2p.peer_offset;
    if (peer < 0 || peer >= size) fail(fmt::format("op '{}': peer offset {} leaves the group", op.name, p2p.peer_offset));
    const auto bytes = static_cast<std::size_t>(p2p.bytes);
    nccl(p2p.is_send ? ncclSend(stream.scratch, bytes, ncclInt8, peer, comm, stream.stream)
                     : ncclRecv(stream.scratch, bytes, ncclInt8, peer, comm, stream.stream),
         op);
  }

  // --verify: before the op, its crafted input is copied in and its result buffer poisoned;
  // after it, both are copied back to pinned host memory, checked once the run is over.
  void prepare_check(OpIndex index, DeviceStream& stream) {
    const program::Op& op = (*ops_)[index];
    const auto* collective = std::get_if<program::CollectiveOp>(&op.body);
    const auto* p2p = std::get_if<program::SendRecvOp>(&op.body);
    if (collective == nullptr && p2p == nullptr) return;
    Checked checked;
    checked.op = index;
    checked.bytes = std::max<std::int64_t>(collective ? collective->bytes : p2p->bytes, 4);
    const ncclComm_t comm = collective ? comm_of(collective->group, static_cast<int>(op.stream), op)
                                       : comm_of(p2p->group, direction_key(*p2p), op);
    nccl(ncclCommCount(comm, &checked.size), op);
    nccl(ncclCommUserRank(comm, &checked.member), op);
    const auto bytes = static_cast<std::size_t>(checked.bytes);
    cuda(cudaMallocHost(&checked.in, bytes), fmt::format("op '{}': pinned memory for --verify", op.name));
    cuda(cudaMallocHost(&checked.out, bytes), fmt::format("op '{}': pinned memory for --verify", op.name));
    std::memset(checked.in, 0xFF, bytes);
    if (collective) verification::fill_collective(*collective, checked.member, checked.size, checked.in);
    if (p2p && p2p->is_send) verification::fill_transfer(checked.member, p2p->bytes, checked.in);
    const auto [in, out] = collective ? halves(stream, collective->bytes) : std::pair{stream.scratch, stream.scratch};
    cuda(cudaMemcpyAsync(in, checked.in, bytes, cudaMemcpyHostToDevice, stream.stream), "copying a crafted input");
    if (collective) cuda(cudaMemsetAsync(out, 0xFF, bytes, stream.stream), "poisoning a result buffer");  // NaN floats
    checked_ops_.push_back(checked);
  }

  void keep_result(OpIndex index, DeviceStream& stream) {
    if (checked_ops_.empty() || checked_ops_.back().op != index) return;
    Checked& checked = checked_ops_.back();
    const auto* collective = std::get_if<program::CollectiveOp>(&(*ops_)[index].body);
    const auto [in, out] = collective ? halves(stream, collective->bytes) : std::pair{stream.scratch, stream.scratch};
    const auto bytes = static_cast<std::size_t>(checked.bytes);
    cuda(cudaMemcpyAsync(checked.in, in, bytes, cudaMemcpyDeviceToHost, stream.stream), "copying a result back");
    cuda(cudaMemcpyAsync(checked.out, out, bytes, cudaMemcpyDeviceToHost, stream.stream), "copying a result back");
  }

  void check_results() {
    for (Checked& checked : checked_ops_) {
      const program::Op& op = (*ops_)[checked.op];
      std::optional<std::string> wrong;
      if (const auto* collective = std::get_if<program::CollectiveOp>(&op.body)) {
        if (faults_.corrupts(op)) (collective->kind == program::CollectiveKind::kBroadcast ? checked.in : checked.out)[0] ^= 0x40;
        wrong = verification::check_collective(*collective, checked.member, checked.size, checked.in, checked.out);
      } else if (const auto& p2p = std::get<program::SendRecvOp>(op.body); !p2p.is_send) {
        if (faults_.corrupts(op)) checked.out[0] ^= 0x40;
        wrong = verification::check_transfer(checked.member + p2p.peer_offset, p2p.bytes, checked.out);
      }
      if (wrong) fail(fmt::format("op '{}': wrong result (group member {}): {}", op.name, checked.member, *wrong));
      ++checked_;
      cudaFreeHost(checked.in);
      cudaFreeHost(checked.out);
    }
    checked_ops_.clear();
  }

  // Until every op has finished: polls the end events and the communicators' errors; ends the
  // job on an NCCL error, or when no op has finished for options.timeout_s.
  void watch() {
    std::vector<std::uint8_t> finished(ops_->size(), 0);
    std::size_t remaining = ops_->size();
    Clock::time_point progress = Clock::now();
    while (remaining > 0) {
      for (OpIndex i = 0; i < ops_->size(); ++i) {
        if (finished[i] != 0) continue;
        const cudaError_t status = cudaEventQuery(end_event(i));
        if (status == cudaErrorNotReady) continue;
        cuda(status, fmt::format("op '{}'", (*ops_)[i].name));
        finished[i] = 1;
        --remaining;
        progress = Clock::now();
      }
      for (const auto& [key, comm] : comms_) {
        ncclResult_t error = ncclSuccess;
        ncclCommGetAsyncError(comm, &error);
        if (error != ncclSuccess && error != ncclInProgress) {
          const auto oldest = std::find(finished.begin(), finished.end(), 0) - finished.begin();
          fail(fmt::format("op '{}': NCCL error: {}", (*ops_)[static_cast<OpIndex>(oldest)].name, ncclGetErrorString(error)));
        }
      }
      if (remaining > 0 && std::chrono::duration<double>(Clock::now() - progress).count() > options_.timeout_s) {
        const auto oldest = std::find(finished.begin(), finished.end(), 0) - finished.begin();
        fail(fmt::format("op '{}' did not finish within {} s (timeout): a peer never reached it, or stopped",
                         (*ops_)[static_cast<OpIndex>(oldest)].name, options_.timeout_s));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  const program::Program& program_;
  const ExecutionOptions& options_;
  int rank_ = job::world_rank();
  const std::vector<program::Op>* ops_;
  job::FaultInjector faults_{options_, rank_};
  program::Op setup_op_{"(creating NCCL communicators)", 0, {}, program::MemoryOp{}};
  std::string nccl_algo_;
  std::string device_name_;
  ncclComm_t world_ = nullptr;
  std::map<std::pair<program::GroupFamilyId, int>, ncclComm_t> comms_;
  std::vector<DeviceStream> streams_;
  std::vector<cudaEvent_t> events_;  // start and end of each op
  cudaEvent_t origin_ = nullptr;
  std::vector<HostWork> host_work_;
  char* pinned_ = nullptr;  // host side of host↔device copies
  std::int64_t pinned_bytes_ = 0;
  bool verifying_ = false;
  std::vector<Checked> checked_ops_;
  std::int64_t checked_ = 0;
};

}  // namespace

std::unique_ptr<job::RankRunner> job::gpu_runner(const program::Program& program, const ExecutionOptions& options,
                                                 const std::vector<std::int32_t>&) {
  return std::make_unique<GpuExecutor>(program, options);
}

}  // namespace backend
