// The GPU executor: a Program run with NCCL, cuBLAS and CUDA streams (see backend/executor.h).
//
// One host thread enqueues the rank's ops in Program order, each on the CUDA stream of its
// Program stream: a dependency on another stream's op becomes cudaStreamWaitEvent on that op's
// end event (same-stream order is the stream's own), so the GPU overlaps what the Program lets
// overlap. Each op is bracketed by two CUDA events; a span starts at its start event's time
// after an origin event every stream waits on (recorded after the common barrier) and lasts
// the time between its two events.
//
//  * compute ops: the stand-ins of gpu_kernels.h (cuBLAS GEMMs of the op's shapes and dtype,
//    the memory-pass kernel); host↔device copies as cudaMemcpyAsync from pinned memory;
//    host-side ops (an offloaded optimizer) as the CPU kernel in stream order
//    (cudaLaunchHostFunc), one BLAS thread as on CPU ranks;
//  * collectives: NCCL on one communicator per (group family, stream), split from a world
//    communicator (ncclCommSplit) — the n-th collective of a group on a stream then matches the
//    n-th of every member, as on the CPU path; reductions in fp32 (the op's bytes move; the
//    crafted --verify sums stay exact); all-to-all as grouped sends and receives;
//  * point-to-point: one two-rank communicator per (group family, sender, receiver): NCCL runs
//    the kernels of one communicator one after another, so a rank's sends and receives (on
//    their own streams in the Program) must not share one; per pair, transfers match in
//    Program order.
// NCCL_ALGO is set from the scenario before the first communicator (nccl_algorithm.h).
//
// The host never waits on a peer mid-run: algorithms connect when communicators are created
// (NCCL_RUNTIME_CONNECT=0) and point-to-point connections are made by one small exchange per
// communicator, in the same order on every rank, before the first run. Communicators are
// non-blocking (gpu_job.h): creating, splitting and connecting them, and each call, are waited
// for under options.timeout_s. A watchdog thread polls the ops' end events and, between the
// host's NCCL calls, every communicator's asynchronous error while the host enqueues; an NCCL
// error, or no progress for options.timeout_s, ends the job naming the oldest unfinished op.
//
// Every op reads an input area filled once with random values and writes an output area
// (gpu_kernels.h); collectives send from the input area and receive into the output area.
//
// A collective's span starts when its kernel starts, which includes waiting for late peers
// (the CPU path and the simulator start it at the last arrival): docs/backend.md.
#include <cblas.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "backend/gpu/cublas_library.h"
#include "backend/gpu/gpu_job.h"
#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/memory_kernels.h"
#include "backend/gpu_rules.h"
#include "backend/job.h"
#include "backend/mpi/cpu_kernels.h"
#include "backend/mpi/verification.h"
#include "backend/nccl_algorithm.h"

namespace backend {
namespace {

using program::OpIndex;
using job::Clock;

// A collective's input and output buffers: each at least 4 bytes, aligned.
std::int64_t buffer_bytes(std::int64_t bytes) { return gpu::aligned_bytes(std::max<std::int64_t>(bytes, 4)); }

// Device bytes an op reads and writes: its operands (compute), input and output (collectives),
// the message (transfers: a send reads it, a receive writes it).
gpu::ScratchBytes device_bytes(const program::Op& op) {
  if (const auto* compute = std::get_if<program::ComputeOp>(&op.body)) {
    if (compute->on_host) return {};
    if (compute->kind == program::ComputeKind::kMemcpy) {  // to the host from the inputs, to the device into the outputs
      const auto bytes = std::max<std::int64_t>(static_cast<std::int64_t>(compute->bytes), 4);
      return {bytes, bytes};
    }
    return gpu::compute_scratch_bytes(*compute);
  }
  if (const auto* collective = std::get_if<program::CollectiveOp>(&op.body)) {
    return {buffer_bytes(collective->bytes), buffer_bytes(collective->bytes)};
  }
  if (const auto* p2p = std::get_if<program::SendRecvOp>(&op.body)) {
    const std::int64_t bytes = std::max<std::int64_t>(p2p->bytes, 4);
    return p2p->is_send ? gpu::ScratchBytes{bytes, 0} : gpu::ScratchBytes{0, bytes};
  }
  return {};
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

// One Program stream on the GPU: its CUDA stream, cuBLAS handle and device scratch — an input
// area (random values) and an output area, each sized before the run to the largest op on the
// stream (ops of one stream run one after another).
struct DeviceStream {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  char* inputs = nullptr;
  char* outputs = nullptr;
  gpu::ScratchBytes bytes;
  cpu::Scratch host_scratch;
};

// What --verify keeps for one collective or transfer: its crafted input and, after the run, its
// result, in pinned host memory allocated before the run.
struct Checked {
  int member = 0;
  int size = 1;
  std::int64_t bytes = 0;
  char* in = nullptr;
  char* out = nullptr;
};

// A point-to-point communicator's key: (group family, sender's index, receiver's index).
using PairKey = std::tuple<program::GroupFamilyId, std::int32_t, std::int32_t>;

class GpuExecutor final : public job::RankRunner {
 public:
  GpuExecutor(const program::Program& program, const ExecutionOptions& options) : program_(program), options_(options) {
    job::check_program(program, options, nullptr, "on a GPU", [](const program::Op& op) -> std::string {
      const auto* collective = std::get_if<program::CollectiveOp>(&op.body);
      if (collective != nullptr && program::is_parameter_server(collective->kind)) {
        return "the GPU executor does not run parameter-server push/pull (NCCL has no servers): use --backend mpi";
      }
      const auto* p2p = std::get_if<program::SendRecvOp>(&op.body);
      if (p2p != nullptr && p2p->peer_offset == 0) return "a transfer to itself: NCCL would wait for it forever";
      return "";
    });
    if (options.own_schedules) {
      throw ExecutionError("[backend] collectives = \"dtsim\" runs on the CPU path only: NCCL runs its own algorithms "
                           "(fix them with [collectives]; they become NCCL_ALGO)");
    }
    ops_ = &program.ranks[static_cast<std::size_t>(rank_)]->ops;  // world size checked above
    set_nccl_algo();
    gpu::check_nccl_version(!nccl_algo_.empty());  // the same library on every rank: refused alike
    setenv("NCCL_RUNTIME_CONNECT", "0", 0);  // connect algorithms at creation (unless the user chose otherwise)
    openblas_set_num_threads(1);             // host-side ops: one core per rank, as on CPU ranks
    device_name_ = gpu::select_gpu(options.share_gpu, options.timeout_s);
    cuda(cudaGetDevice(&device_), "reading the GPU index");
    create_streams();
    create_communicators();
    connect_point_to_point();
  }

  ~GpuExecutor() override {
    for (const ncclComm_t comm : all_comms_) ncclCommDestroy(comm);
    for (const cudaEvent_t event : events_) cudaEventDestroy(event);
    cudaEventDestroy(origin_);
    for (DeviceStream& stream : streams_) {
      cudaFree(stream.inputs);
      cudaFree(stream.outputs);
      if (stream.blas != nullptr) gpu::cublas().destroy(stream.blas);
      if (stream.stream != nullptr) cudaStreamDestroy(stream.stream);
    }
    cudaFreeHost(pinned_);
    cudaFreeHost(check_memory_);
  }

  job::RankRecord run(bool verifying) override {
    verifying_ = verifying;
    if (verifying) allocate_checks();  // pinned memory mid-run would serialise the streams
    MPI_Request barrier = MPI_REQUEST_NULL;
    MPI_Ibarrier(MPI_COMM_WORLD, &barrier);
    job::wait_for_job(barrier, options_.timeout_s, "the barrier before the run");
    const Clock::time_point start = Clock::now();
    cuda(cudaEventRecord(origin_, streams_.front().stream), "recording the origin event");
    for (DeviceStream& stream : streams_) cuda(cudaStreamWaitEvent(stream.stream, origin_, 0), "waiting for the origin");
    enqueued_ = 0;
    std::thread watchdog([this] { watch(); });
    for (OpIndex i = 0; i < ops_->size(); ++i) {
      enqueue(i);
      enqueued_ = i + 1;
    }
    // The host time ends when the GPU does: each stream's last op (the watchdog, still polling,
    // ends the job if one never finishes).
    for (const std::vector<OpIndex>& ops : stream_ops_) {
      if (!ops.empty()) cuda(cudaEventSynchronize(end_event(ops.back())), "waiting for the run's last ops");
    }
    job::RankRecord record;
    record.host_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    watchdog.join();
    if (verifying) {  // the checked results' copies, queued after their ops' end events
      for (const DeviceStream& stream : streams_) {
        if (const auto problem = gpu::wait_for_stream(stream.stream, {}, options_.timeout_s)) {
          fail("copying the checked results back: " + *problem);
        }
      }
    }
    for (OpIndex i = 0; i < ops_->size(); ++i) {
      const gpu_rules::EventSpan span = gpu_rules::span_from_origin(elapsed_ms(start_event(i)), elapsed_ms(end_event(i)));
      record.timings.push_back({static_cast<std::int64_t>(i), span.start_ps, span.end_ps});
    }
    if (verifying) {
      check_results();
      fill_inputs();  // the crafted inputs of the checks replaced by random values again
    }
    return record;
  }

  std::int64_t results_checked() const override { return checked_; }

  std::string description() const override {
    int nccl_version = 0;
    ncclGetVersion(&nccl_version);
    return fmt::format("NCCL {} + cuBLAS on {} (one GPU per rank){}", gpu_rules::nccl_version_text(nccl_version),
                       device_name_, nccl_algo_.empty() ? "" : ", NCCL_ALGO=" + nccl_algo_);
  }

 private:
  // Ends the job: the first caller reports and MPI_Abort stops every rank; a second caller
  // waits for that. No communicator is aborted first: no host thread is ever blocked in a
  // non-blocking communicator, and ncclCommAbort frees device memory, which waits for the
  // very kernels that are stuck (NVIDIA/nccl#564) — the report would never come.
  [[noreturn]] void fail(const std::string& message) {
    if (failing_.exchange(true)) {
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    job::fail(rank_, message);
  }

  void cuda(cudaError_t status, const std::string& what) {
    if (status != cudaSuccess) fail(fmt::format("{}: CUDA error: {}", what, cudaGetErrorString(status)));
  }
  // Waits for a call on `comm` (non-blocking: it goes on in NCCL's thread) and ends the job if
  // it failed or did not finish within the timeout.
  void nccl(ncclComm_t comm, ncclResult_t status, const std::string& what) {
    if (const auto problem = gpu::settled(comm, status, options_.timeout_s)) fail(what + ": " + *problem);
  }
  static std::string op_label(const program::Op& op) { return fmt::format("op '{}'", op.name); }

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

  ncclComm_t split(int color, int key) {
    const ncclComm_t comm = gpu::split_communicator(world_, color, key, options_.timeout_s, "splitting an NCCL communicator");
    if (comm != nullptr) all_comms_.push_back(comm);
    return comm;
  }

  // The world communicator, then one split per (family, stream) for collectives and per
  // (family, sender, receiver) for transfers, in the same order on every rank (ncclCommSplit is
  // collective over the world communicator).
  void create_communicators() {
    world_ = gpu::world_communicator(options_.timeout_s);
    all_comms_.push_back(world_);
    std::vector<std::pair<program::GroupFamilyId, int>> collective_keys;  // (family, stream)
    std::vector<PairKey> pair_keys;
    for (std::int32_t rank = 0; rank < program_.world_size; ++rank) {
      for (const program::Op& op : program_.ranks[static_cast<std::size_t>(rank)]->ops) {
        if (const auto* collective = std::get_if<program::CollectiveOp>(&op.body)) {
          collective_keys.emplace_back(collective->group, static_cast<int>(op.stream));
        } else if (const auto* p2p = std::get_if<program::SendRecvOp>(&op.body)) {
          pair_keys.push_back(pair_key(*p2p, rank));
        }
      }
    }
    std::sort(collective_keys.begin(), collective_keys.end());
    collective_keys.erase(std::unique(collective_keys.begin(), collective_keys.end()), collective_keys.end());
    std::sort(pair_keys.begin(), pair_keys.end());
    pair_keys.erase(std::unique(pair_keys.begin(), pair_keys.end()), pair_keys.end());
    for (const auto& key : collective_keys) {
      const program::GroupFamily& family = program_.family(key.first);
      const std::int32_t instance = family.instance_of_rank[static_cast<std::size_t>(rank_)];
      const ncclComm_t comm = split(instance < 0 ? NCCL_SPLIT_NOCOLOR : instance,
                                    instance < 0 ? 0 : family.index_in_instance[static_cast<std::size_t>(rank_)]);
      if (comm != nullptr) comms_[key] = comm;
    }
    for (const PairKey& key : pair_keys) {
      const auto [family_id, sender, receiver] = key;
      const program::GroupFamily& family = program_.family(family_id);
      const std::int32_t instance = family.instance_of_rank[static_cast<std::size_t>(rank_)];
      const std::int32_t me = instance < 0 ? -1 : family.index_in_instance[static_cast<std::size_t>(rank_)];
      const bool member = me == sender || me == receiver;
      const ncclComm_t comm = split(member ? instance : NCCL_SPLIT_NOCOLOR, me == sender ? 0 : 1);
      if (comm != nullptr) pair_comms_[key] = comm;
    }
  }

  // A transfer's pair communicator key, seen from `world_rank`, which sends or receives it.
  PairKey pair_key(const program::SendRecvOp& p2p, std::int32_t world_rank) const {
    const program::GroupFamily& family = program_.family(p2p.group);
    const std::int32_t me = family.index_in_instance[static_cast<std::size_t>(world_rank)];
    const auto size = static_cast<std::int32_t>(family.instances[family.instance_of_rank[static_cast<std::size_t>(world_rank)]].size());
    const std::int32_t peer = program::peer_position(p2p, me, size);
    return p2p.is_send ? PairKey{p2p.group, me, peer} : PairKey{p2p.group, peer, me};
  }

  ncclComm_t comm_of(program::GroupFamilyId family, int stream, const program::Op& op) {
    const auto found = comms_.find({family, stream});
    if (found == comms_.end()) fail(fmt::format("op '{}': this rank is in no instance of group '{}'", op.name, program_.family(family).name));
    return found->second;
  }

  ncclComm_t pair_comm_of(const program::SendRecvOp& p2p, const program::Op& op) {
    const auto found = pair_comms_.find(pair_key(p2p, rank_));
    if (found == pair_comms_.end()) fail(fmt::format("op '{}': peer offset {} leaves the group", op.name, p2p.peer_offset));
    return found->second;
  }

  // NCCL makes point-to-point connections at a communicator's first send or receive, the host
  // waiting for the peer there. One 4-byte exchange with every peer of each communicator that
  // sends (pairs, and the collective ones all-to-all uses), in the same order on every rank,
  // makes them all before the first run.
  void connect_point_to_point() {
    std::vector<ncclComm_t> exchanging;
    for (const auto& [key, comm] : pair_comms_) exchanging.push_back(comm);
    for (const auto& [key, comm] : comms_) {
      const bool all_to_all = std::any_of(ops_->begin(), ops_->end(), [&](const program::Op& op) {
        const auto* collective = std::get_if<program::CollectiveOp>(&op.body);
        return collective != nullptr && collective->kind == program::CollectiveKind::kAllToAll &&
               std::pair{collective->group, static_cast<int>(op.stream)} == key;
      });
      if (all_to_all) exchanging.push_back(comm);
    }
    const DeviceStream& stream = streams_.front();
    char* buffer = nullptr;
    cuda(cudaMalloc(&buffer, 8), "allocating a connection buffer");
    for (const ncclComm_t comm : exchanging) {
      int size = 1, me = 0;
      nccl(comm, ncclCommCount(comm, &size), "connecting peers");
      nccl(comm, ncclCommUserRank(comm, &me), "connecting peers");
      nccl(comm, ncclGroupStart(), "connecting peers");
      for (int peer = 0; peer < size; ++peer) {
        if (peer == me) continue;
        nccl(comm, ncclSend(buffer, 4, ncclInt8, peer, comm, stream.stream), "connecting peers");
        nccl(comm, ncclRecv(buffer + 4, 4, ncclInt8, peer, comm, stream.stream), "connecting peers");
      }
      nccl(comm, ncclGroupEnd(), "connecting peers");
    }
    if (const auto problem = gpu::wait_for_stream(stream.stream, all_comms_, options_.timeout_s)) {
      fail("connecting peers: " + *problem);
    }
    cudaFree(buffer);
  }

  // CUDA streams, cuBLAS handles, events and device scratch. A failed allocation names the op
  // that needs the most and the bytes asked for.
  void create_streams() {
    streams_.resize(program_.streams.size());
    std::vector<OpIndex> largest(streams_.size(), 0);
    stream_ops_.resize(streams_.size());
    for (OpIndex i = 0; i < ops_->size(); ++i) {
      const program::Op& op = (*ops_)[i];
      stream_ops_[op.stream].push_back(i);
      DeviceStream& stream = streams_[op.stream];
      const gpu::ScratchBytes bytes = device_bytes(op);
      if (bytes.total() > stream.bytes.total()) largest[op.stream] = i;
      stream.bytes.inputs = std::max(stream.bytes.inputs, bytes.inputs);
      stream.bytes.outputs = std::max(stream.bytes.outputs, bytes.outputs);
      if (const auto* compute = std::get_if<program::ComputeOp>(&op.body); compute && compute->kind == program::ComputeKind::kMemcpy) {
        pinned_bytes_ = std::max(pinned_bytes_, static_cast<std::int64_t>(compute->bytes));
      }
    }
    for (std::size_t s = 0; s < streams_.size(); ++s) {
      DeviceStream& stream = streams_[s];
      cuda(cudaStreamCreateWithFlags(&stream.stream, cudaStreamNonBlocking), "creating a CUDA stream");
      try {
        stream.blas = gpu::blas_handle(stream.stream);
      } catch (const std::runtime_error& error) {
        fail(error.what());
      }
      for (auto [area, bytes] : {std::pair{&stream.inputs, stream.bytes.inputs}, std::pair{&stream.outputs, stream.bytes.outputs}}) {
        if (bytes == 0) continue;
        const cudaError_t status = cudaMalloc(area, static_cast<std::size_t>(bytes));
        if (status != cudaSuccess) {
          fail(fmt::format("op '{}': device out of memory allocating {} bytes ({}) for stream '{}'",
                           (*ops_)[largest[s]].name, bytes, cudaGetErrorString(status), program_.streams[s]));
        }
      }
    }
    fill_inputs();
    if (pinned_bytes_ > 0) cuda(cudaMallocHost(&pinned_, static_cast<std::size_t>(pinned_bytes_)), "allocating pinned memory");
    events_.resize(2 * ops_->size());
    for (cudaEvent_t& event : events_) cuda(cudaEventCreate(&event), "creating CUDA events");
    cuda(cudaEventCreate(&origin_), "creating CUDA events");
    host_work_.resize(ops_->size());
  }

  cudaEvent_t start_event(OpIndex op) const { return events_[2 * op]; }
  cudaEvent_t end_event(OpIndex op) const { return events_[2 * op + 1]; }

  // Milliseconds from the run's origin event to `event`.
  float elapsed_ms(cudaEvent_t event) {
    float ms = 0;
    cuda(cudaEventElapsedTime(&ms, origin_, event), "reading a CUDA event");
    return ms;
  }

  // Random values in every stream's input area (a seed per rank and stream), before the first
  // run and after a verified one.
  void fill_inputs() {
    for (std::size_t s = 0; s < streams_.size(); ++s) {
      const DeviceStream& stream = streams_[s];
      const auto seed = static_cast<std::uint32_t>(rank_ * 1000 + static_cast<int>(s) + 1);
      cuda(gpu::fill_random(stream.inputs, stream.bytes.inputs, seed, stream.stream), "filling the inputs");
      cuda(cudaStreamSynchronize(stream.stream), "filling the inputs");
    }
  }

  void enqueue(OpIndex index) {
    const program::Op& op = (*ops_)[index];
    DeviceStream& stream = streams_[op.stream];
    for (const OpIndex dependency : op.deps) {
      if ((*ops_)[dependency].stream != op.stream) {
        cuda(cudaStreamWaitEvent(stream.stream, end_event(dependency), 0), op_label(op) + ": waiting for its dependency");
      }
    }
    try {
      faults_.at_start(op);
    } catch (const std::bad_alloc&) {
      fail(fmt::format("op '{}': device out of memory allocating {} bytes (injected)", op.name, device_bytes(op).total()));
    }
    if (verifying_) prepare_check(index, stream);
    cuda(cudaEventRecord(start_event(index), stream.stream), "recording an event");
    if (const auto* compute = std::get_if<program::ComputeOp>(&op.body)) run_compute(index, *compute, stream);
    if (std::holds_alternative<program::CollectiveOp>(op.body) || std::holds_alternative<program::SendRecvOp>(op.body)) {
      // ncclCommGetAsyncError completes a non-blocking call (it joins NCCL's launch thread): the
      // watchdog must not poll while a call is being waited for (see watch()).
      const std::lock_guard<std::mutex> calling(nccl_calls_);
      if (const auto* collective = std::get_if<program::CollectiveOp>(&op.body)) run_collective(*collective, op, stream);
      if (const auto* p2p = std::get_if<program::SendRecvOp>(&op.body)) run_send_recv(*p2p, op, stream);
    }
    cuda(cudaEventRecord(end_event(index), stream.stream), "recording an event");
    if (verifying_) keep_result(index, stream);
  }

  void run_compute(OpIndex index, const program::ComputeOp& compute, DeviceStream& stream) {
    const program::Op& op = (*ops_)[index];
    if (compute.on_host) {
      host_work_[index] = {&compute, &stream.host_scratch};
      cuda(cudaLaunchHostFunc(stream.stream, run_on_host, &host_work_[index]), op_label(op));
      return;
    }
    if (compute.kind == program::ComputeKind::kMemcpy) {
      const auto bytes = static_cast<std::size_t>(compute.bytes);
      const bool to_host = program_.streams[op.stream].find("device_to_host") != std::string::npos;
      cuda(to_host ? cudaMemcpyAsync(pinned_, stream.inputs, bytes, cudaMemcpyDeviceToHost, stream.stream)
                   : cudaMemcpyAsync(stream.outputs, pinned_, bytes, cudaMemcpyHostToDevice, stream.stream),
           op_label(op));
      return;
    }
    if (const std::string error = gpu::enqueue_compute(compute, stream.blas, stream.stream, stream.inputs, stream.outputs); !error.empty()) {
      fail(fmt::format("op '{}': {}", op.name, error));
    }
  }

  void run_collective(const program::CollectiveOp& collective, const program::Op& op, DeviceStream& stream) {
    const ncclComm_t comm = comm_of(collective.group, static_cast<int>(op.stream), op);
    const std::string what = op_label(op);
    int size = 1;
    nccl(comm, ncclCommCount(comm, &size), what);
    char* const in = stream.inputs;  // a collective reads the input area, writes the output area
    char* const out = stream.outputs;
    const auto floats = static_cast<std::size_t>(collective.bytes / 4);
    const auto share = static_cast<std::size_t>(collective.bytes / size);
    switch (collective.kind) {
      case program::CollectiveKind::kAllReduce:
        nccl(comm, ncclAllReduce(in, out, floats, ncclFloat, ncclSum, comm, stream.stream), what);
        break;
      case program::CollectiveKind::kAllGather:
        nccl(comm, ncclAllGather(in, out, share, ncclInt8, comm, stream.stream), what);
        break;
      case program::CollectiveKind::kReduceScatter:
        nccl(comm, ncclReduceScatter(in, out, floats / static_cast<std::size_t>(size), ncclFloat, ncclSum, comm, stream.stream), what);
        break;
      case program::CollectiveKind::kBroadcast:
        nccl(comm, ncclBroadcast(in, in, static_cast<std::size_t>(collective.bytes), ncclInt8, collective.root, comm, stream.stream), what);
        break;
      case program::CollectiveKind::kReduce:
        nccl(comm, ncclReduce(in, out, floats, ncclFloat, ncclSum, collective.root, comm, stream.stream), what);
        break;
      case program::CollectiveKind::kAllToAll:
        nccl(comm, ncclGroupStart(), what);
        for (int peer = 0; peer < size; ++peer) {
          nccl(comm, ncclSend(in + peer * share, share, ncclInt8, peer, comm, stream.stream), what);
          nccl(comm, ncclRecv(out + peer * share, share, ncclInt8, peer, comm, stream.stream), what);
        }
        nccl(comm, ncclGroupEnd(), what);
        break;
      case program::CollectiveKind::kBarrier:
        nccl(comm, ncclAllReduce(in, out, 1, ncclFloat, ncclSum, comm, stream.stream), what);
        break;
      case program::CollectiveKind::kPsPush:
      case program::CollectiveKind::kPsPull:
        break;  // refused up front
    }
  }

  // On a pair communicator the sender is rank 0 and the receiver rank 1.
  void run_send_recv(const program::SendRecvOp& p2p, const program::Op& op, DeviceStream& stream) {
    const ncclComm_t comm = pair_comm_of(p2p, op);
    const auto bytes = static_cast<std::size_t>(p2p.bytes);
    nccl(comm,
         p2p.is_send ? ncclSend(stream.inputs, bytes, ncclInt8, 1, comm, stream.stream)
                     : ncclRecv(stream.outputs, bytes, ncclInt8, 0, comm, stream.stream),
         op_label(op));
  }

  // --verify: one pinned block holds every checked op's crafted input and result, allocated
  // before the run; the inputs are filled here.
  void allocate_checks() {
    if (check_memory_ != nullptr) return;
    std::int64_t total = 0;
    for (OpIndex i = 0; i < ops_->size(); ++i) {
      const program::Op& op = (*ops_)[i];
      Checked checked;
      if (const auto* collective = std::get_if<program::CollectiveOp>(&op.body)) {
        checked.bytes = buffer_bytes(collective->bytes);
        const ncclComm_t comm = comm_of(collective->group, static_cast<int>(op.stream), op);
        nccl(comm, ncclCommCount(comm, &checked.size), op_label(op));
        nccl(comm, ncclCommUserRank(comm, &checked.member), op_label(op));
      } else if (const auto* p2p = std::get_if<program::SendRecvOp>(&op.body)) {
        checked.bytes = std::max<std::int64_t>(p2p->bytes, 4);
        const program::GroupFamily& family = program_.family(p2p->group);
        checked.member = family.index_in_instance[static_cast<std::size_t>(rank_)];
        checked.size = static_cast<int>(family.instances[family.instance_of_rank[static_cast<std::size_t>(rank_)]].size());
      } else {
        continue;
      }
      checks_[i] = checked;
      total += 2 * checked.bytes;
    }
    if (total == 0) return;
    const cudaError_t status = cudaMallocHost(&check_memory_, static_cast<std::size_t>(total));
    if (status != cudaSuccess) {
      fail(fmt::format("--verify: cannot pin {} bytes of host memory for the checked results ({})", total,
                       cudaGetErrorString(status)));
    }
    char* next = check_memory_;
    for (auto& [index, checked] : checks_) {
      checked.in = next;
      checked.out = next + checked.bytes;
      next += 2 * checked.bytes;
      const program::Op& op = (*ops_)[index];
      std::memset(checked.in, 0xFF, static_cast<std::size_t>(checked.bytes));
      if (const auto* collective = std::get_if<program::CollectiveOp>(&op.body)) {
        verification::fill_collective(*collective, checked.member, checked.size, checked.in);
      } else if (const auto& p2p = std::get<program::SendRecvOp>(op.body); p2p.is_send) {
        verification::fill_transfer(checked.member, p2p.bytes, checked.in);
      }
    }
  }

  // Before a checked op its crafted input is copied in (a receive's buffer is poisoned) and a
  // collective's result buffer poisoned (NaN floats); after it both come back.
  void prepare_check(OpIndex index, DeviceStream& stream) {
    const auto found = checks_.find(index);
    if (found == checks_.end()) return;
    const Checked& checked = found->second;
    const auto [in, out] = device_buffers(index, stream);
    const auto bytes = static_cast<std::size_t>(checked.bytes);
    cuda(cudaMemcpyAsync(in, checked.in, bytes, cudaMemcpyHostToDevice, stream.stream), "copying a crafted input");
    if (out != in) cuda(cudaMemsetAsync(out, 0xFF, bytes, stream.stream), "poisoning a result buffer");
  }

  void keep_result(OpIndex index, DeviceStream& stream) {
    const auto found = checks_.find(index);
    if (found == checks_.end()) return;
    const Checked& checked = found->second;
    const auto [in, out] = device_buffers(index, stream);
    const auto bytes = static_cast<std::size_t>(checked.bytes);
    cuda(cudaMemcpyAsync(checked.in, in, bytes, cudaMemcpyDeviceToHost, stream.stream), "copying a result back");
    cuda(cudaMemcpyAsync(checked.out, out, bytes, cudaMemcpyDeviceToHost, stream.stream), "copying a result back");
  }

  // Where a checked op's input and result are: a collective's input and output areas, a send's
  // message (input area), a receive's (output area).
  std::pair<char*, char*> device_buffers(OpIndex index, const DeviceStream& stream) const {
    if (std::holds_alternative<program::CollectiveOp>((*ops_)[index].body)) return {stream.inputs, stream.outputs};
    char* message = std::get<program::SendRecvOp>((*ops_)[index].body).is_send ? stream.inputs : stream.outputs;
    return {message, message};
  }

  // After the verified run: every collective's result and every received transfer, as the CPU
  // executor checks them.
  void check_results() {
    for (auto& [index, checked] : checks_) {
      const program::Op& op = (*ops_)[index];
      std::optional<std::string> wrong;
      if (const auto* collective = std::get_if<program::CollectiveOp>(&op.body)) {
        if (faults_.corrupts(op)) (collective->kind == program::CollectiveKind::kBroadcast ? checked.in : checked.out)[0] ^= 0x40;
        wrong = verification::check_collective(*collective, checked.member, checked.size, checked.in, checked.out);
      } else if (const auto& p2p = std::get<program::SendRecvOp>(op.body); !p2p.is_send) {
        if (faults_.corrupts(op)) checked.out[0] ^= 0x40;
        wrong = verification::check_transfer(program::peer_position(p2p, checked.member, checked.size), p2p.bytes, checked.out);
      } else {
        continue;  // a send's result is its receiver's
      }
      if (wrong) fail(fmt::format("op '{}': wrong result (group member {}): {}", op.name, checked.member, *wrong));
      ++checked_;
    }
  }

  // The watchdog (its own thread, from the run's start): polls the communicators' errors and,
  // per stream, the end event of its oldest unfinished op (a stream finishes its ops in order),
  // until every op has finished; ends the job on an error, or when neither an op was enqueued
  // nor one finished for options.timeout_s.
  void watch() {
    cuda(cudaSetDevice(device_), "selecting the GPU");  // the device is per host thread
    std::vector<std::size_t> next(stream_ops_.size(), 0);  // per stream: its oldest unfinished op
    std::size_t remaining = ops_->size(), seen_enqueued = 0;
    Clock::time_point progress = Clock::now();
    const auto oldest = [&] {
      OpIndex first = static_cast<OpIndex>(ops_->size());
      for (std::size_t s = 0; s < next.size(); ++s) {
        if (next[s] < stream_ops_[s].size()) first = std::min(first, stream_ops_[s][next[s]]);
      }
      return first < ops_->size() ? (*ops_)[first].name : std::string("(none: every op had finished)");
    };
    while (remaining > 0) {
      const std::size_t enqueued = enqueued_;
      if (enqueued != seen_enqueued) seen_enqueued = enqueued, progress = Clock::now();
      for (std::size_t s = 0; s < next.size(); ++s) {
        for (; next[s] < stream_ops_[s].size() && stream_ops_[s][next[s]] < enqueued; ++next[s], --remaining) {
          const OpIndex op = stream_ops_[s][next[s]];
          const cudaError_t status = cudaEventQuery(end_event(op));
          if (status == cudaErrorNotReady) break;
          cuda(status, op_label((*ops_)[op]));
          progress = Clock::now();
        }
      }
      // Only between the host's NCCL calls (a round is skipped while one is waited for).
      if (const std::unique_lock<std::mutex> between(nccl_calls_, std::try_to_lock); between.owns_lock()) {
        if (const auto error = gpu::async_error(all_comms_)) fail(fmt::format("op '{}': {}", oldest(), *error));
      }
      if (remaining > 0 && std::chrono::duration<double>(Clock::now() - progress).count() > options_.timeout_s) {
        job::wait_before_timeout_report();
        fail(fmt::format("op '{}' did not finish within {} s (timeout): a peer never reached it, or stopped", oldest(),
                         options_.timeout_s));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  const program::Program& program_;
  const ExecutionOptions& options_;
  int rank_ = job::world_rank();
  const std::vector<program::Op>* ops_ = nullptr;
  job::FaultInjector faults_{options_, rank_};
  std::string nccl_algo_;
  std::string device_name_;
  int device_ = 0;
  ncclComm_t world_ = nullptr;
  std::map<std::pair<program::GroupFamilyId, int>, ncclComm_t> comms_;  // collectives: (family, stream)
  std::map<PairKey, ncclComm_t> pair_comms_;                            // transfers
  std::vector<ncclComm_t> all_comms_;                                   // the world's first
  std::vector<DeviceStream> streams_;
  std::vector<std::vector<OpIndex>> stream_ops_;  // each stream's ops, in order
  std::vector<cudaEvent_t> events_;  // start and end of each op
  cudaEvent_t origin_ = nullptr;
  std::vector<HostWork> host_work_;
  char* pinned_ = nullptr;  // host side of host↔device copies
  std::int64_t pinned_bytes_ = 0;
  bool verifying_ = false;
  std::map<OpIndex, Checked> checks_;
  char* check_memory_ = nullptr;
  std::int64_t checked_ = 0;
  std::atomic<std::size_t> enqueued_{0};
  std::atomic<bool> failing_{false};
  std::mutex nccl_calls_;  // held by the host thread while it makes and waits for an NCCL call
};

}  // namespace

std::unique_ptr<job::RankRunner> job::gpu_runner(const program::Program& program, const ExecutionOptions& options,
                                                 const std::vector<std::int32_t>&) {
  return std::make_unique<GpuExecutor>(program, options);
}

}  // namespace backend
