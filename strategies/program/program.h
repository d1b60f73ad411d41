// program::Program — the IR between strategies and executors.
//
// A strategy (DDP, FSDP, TP, ...) lowers a model and a parallel layout to a Program: for
// every rank, a list of ops placed on named streams with explicit dependencies. The
// simulator gives each op a duration; the real backend launches it. Neither side knows
// which strategy produced the Program.
//
// Ops carry everything an executor needs, not only a cost: compute ops their kind, shapes,
// dtype, FLOPs and bytes moved; collectives the group, kind, message size, dtype and an
// algorithm hint; point-to-point ops a peer; memory ops the tensor, its size and category.
//
// Execution semantics (both executors):
//   * ops on one stream run one at a time, in list order;
//   * an op starts only when every op in `deps` (indices into the same rank's list, always
//     earlier ones) has finished;
//   * a collective starts when every member of its group instance has reached it; the n-th
//     collective a rank issues on a group instance matches the n-th of every other member;
//   * point-to-point sends and receives match in order per (sender, receiver) pair;
//   * memory ops take no time; they change the rank's memory counters.
//
// Ranks whose op lists are identical share one RankProgram (DDP: all of them), so a
// 1,024-rank Program costs little more memory than one rank's.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace program {

enum class DType : std::uint8_t { kBF16, kFP16, kFP32, kFP8 };
std::size_t dtype_bytes(DType dtype);
std::string_view dtype_name(DType dtype);
std::optional<DType> dtype_from_name(std::string_view name);

enum class Phase : std::uint8_t { kForward, kBackward, kRecompute, kOptimizer };
std::string_view phase_name(Phase phase);

enum class ComputeKind : std::uint8_t {
  kMatmul,       // shape [batch, m, n, k]: batch × (C[m,n] = A[m,k] · B[k,n])
  kAttention,    // shape [batch, heads, kv_heads, seq, head_dim]: fused attention core
  kNorm,         // shape [elements]: LayerNorm / RMSNorm
  kElementwise,  // shape [elements]: activation functions, residual adds, dropout
  kSoftmax,      // shape [elements]: softmax along rows (standard attention's scores)
  kEmbedding,    // shape [tokens, hidden]: table lookup
  kLoss,         // shape [tokens, vocab]: softmax cross-entropy
  kOptimizer,    // shape [parameters]: optimizer update
  kMemcpy,       // shape [bytes]: a copy between host and device memory (over the GPU's host link)
  kReduction,    // shape [rows, columns]: a sum over rows (a bias's gradient)
};
std::string_view compute_kind_name(ComputeKind kind);

struct Shape {
  std::array<std::int64_t, 5> dims{};
  std::uint8_t rank = 0;
  static Shape of(std::initializer_list<std::int64_t> values);
  std::int64_t operator[](std::size_t i) const { return dims[i]; }
};

struct ComputeOp {
  ComputeKind kind = ComputeKind::kElementwise;
  Phase phase = Phase::kForward;
  DType dtype = DType::kBF16;
  Shape shape;
  double flops = 0;  // floating-point operations actually executed
  double bytes = 0;  // bytes read and written in device memory (a memcpy: bytes copied)
  bool on_host = false;  // runs on the host CPU (an offloaded optimizer step)
};

enum class CollectiveKind : std::uint8_t {
  kAllReduce,
  kAllGather,      // bytes = the gathered (full) buffer
  kReduceScatter,  // bytes = the full input buffer
  kBroadcast,
  kReduce,
  kAllToAll,       // bytes = what each rank sends in total
  kBarrier,
  kPsPush,         // workers send their gradients to the servers (sharded by key range)
  kPsPull,         // workers fetch the parameters back from the servers
};
std::string_view collective_name(CollectiveKind kind);
inline bool is_parameter_server(CollectiveKind kind) {
  return kind == CollectiveKind::kPsPush || kind == CollectiveKind::kPsPull;
}

enum class Algorithm : std::uint8_t {
  kAuto,
  kRing,
  kTree,
  kHalvingDoubling,
  kHierarchical,
  kDirect,
  kParameterServer,
  kNvls,  // NVLink SHARP: the NVSwitch reduces in the switch (all-reduce inside one HGX H100/H200
          // node)
  kCollNet,   // NCCL's CollNet Direct: InfiniBand switches reduce the shards across nodes (SHARP)
  kNvlsTree,  // NCCL's NVLSTree: NVLink SHARP inside each node, a tree of the nodes over the NICs
};
std::string_view algorithm_name(Algorithm algorithm);
std::optional<Algorithm> algorithm_from_name(std::string_view name);

using GroupFamilyId = std::uint16_t;  // index into Program::group_families
using StreamId = std::uint16_t;       // index into Program::streams
using OpIndex = std::uint32_t;        // index into a RankProgram's ops

struct CollectiveOp {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  GroupFamilyId group = 0;
  std::int64_t bytes = 0;  // message size M (see CollectiveKind for the convention)
  DType dtype = DType::kBF16;
  Algorithm algorithm = Algorithm::kAuto;
  std::int32_t root = 0;        // group-local index, for broadcast and reduce
  std::int32_t ps_servers = 0;  // push/pull: the last `ps_servers` members are the servers
  // Run by Transformer Engine's userbuffers (a chunk of tensor-parallel communication overlap):
  // a ring of direct NVLink copies, without NCCL's kernel launch and protocol latency.
  bool userbuffers = false;
};

// A collective of `kind` over `group` moving `bytes` (rounded to a whole byte) of `dtype`; every
// other field at its default.
CollectiveOp make_collective(CollectiveKind kind, GroupFamilyId group, double bytes, DType dtype);

struct SendRecvOp {
  bool is_send = true;
  GroupFamilyId group = 0;
  std::int32_t peer_offset = 1;  // peer = member (my index + offset) of my group instance
  std::int64_t bytes = 0;
  DType dtype = DType::kBF16;
  bool ring = false;             // the offset wraps around the instance (context parallelism's ring)
  // Runs in a communicator of the two ranks alone (PyTorch's lone isend/irecv) rather than in
  // the group's (batch_isend_irecv): NCCL sizes a send by its communicator (sim/net/nccl_p2p.h).
  bool pair_communicator = false;
};
// The peer's position in a group instance of `size` members as seen from position `me`; -1
// when a non-ring offset leaves the instance.
std::int32_t peer_position(const SendRecvOp& p2p, std::int32_t me, std::int32_t size);

// The first four are resident model states (what the ZeRO paper's per-device figures count);
// the rest are transient: activations, communication buffers, and FSDP/ZeRO-3's gathered
// parameters and unsharded gradients of the units in flight.
enum class MemoryCategory : std::uint8_t {
  kParameters,
  kGradients,
  kMasterWeights,
  kOptimizerStates,
  kActivations,
  kCommBuffers,
  kGatheredParameters,
  kUnshardedGradients,
  kOther,
};
inline bool is_model_state(MemoryCategory category) { return category <= MemoryCategory::kOptimizerStates; }
inline constexpr std::size_t kMemoryCategoryCount =
    static_cast<std::size_t>(MemoryCategory::kOther) + 1;
std::string_view memory_category_name(MemoryCategory category);

struct MemoryOp {
  bool allocate = true;
  MemoryCategory category = MemoryCategory::kOther;
  std::int64_t bytes = 0;
};

using OpBody = std::variant<ComputeOp, CollectiveOp, SendRecvOp, MemoryOp>;

struct Op {
  std::string name;  // e.g. "layer3.fwd.qkv"; a memory op's name is its tensor's name
  StreamId stream = 0;
  std::vector<OpIndex> deps;
  OpBody body;
};

struct RankProgram {
  std::vector<Op> ops;
};

// A family of disjoint rank groups of one kind, e.g. "dp": one instance per data-parallel
// replica set. instance_of_rank[r] is -1 when rank r belongs to none.
struct GroupFamily {
  std::string name;
  std::vector<std::vector<std::int32_t>> instances;
  std::vector<std::int32_t> instance_of_rank;
  std::vector<std::int32_t> index_in_instance;  // rank's position in its instance, or -1
};

// What an executor and the report need to know beyond the ops.
struct ProgramInfo {
  std::string description;       // e.g. "Llama-2-7B, DDP over 16 ranks"
  std::int32_t steps = 1;        // training steps the program runs
  std::int64_t tokens_per_step = 0;
  double model_flops_per_step = 0;  // all ranks together, forward + backward, no recompute
  DType compute_dtype = DType::kBF16;
  std::string pipeline;          // the pipeline schedule, when there is one ("8 stages, 32 micro-batches, 1F1B")
  double pipeline_bubble = 0;    // its textbook bubble fraction (p−1)/(v·M+p−1)
  std::int32_t pipeline_chunks = 1;  // v: model chunks per stage (interleaved 1F1B)
  // Parameter-server training: which ops of the first server's program apply a worker's
  // gradients and send parameters back, so that staleness can be measured on a timeline.
  struct ParameterServer {
    std::string consistency;       // "BSP", "SSP (s = 2)", "ASP"
    std::int32_t workers = 0;
    std::int32_t first_server = 0;  // its rank
    // [worker][step]: the op applying that push, and the op sending that step's parameters.
    std::vector<std::vector<OpIndex>> update_op;
    std::vector<std::vector<OpIndex>> pull_op;
  };
  std::optional<ParameterServer> parameter_server;
};

struct Program {
  std::int32_t world_size = 0;
  std::vector<std::string> streams;
  std::vector<GroupFamily> group_families;
  std::vector<std::shared_ptr<const RankProgram>> ranks;  // one per rank, possibly shared
  std::vector<std::int32_t> placement;  // rank -> cluster endpoint (GPU or server)
  ProgramInfo info;

  const GroupFamily& family(GroupFamilyId id) const { return group_families.at(id); }
  std::optional<GroupFamilyId> find_family(std::string_view name) const;
};

// Builds a group family from explicit instances; checks they are disjoint and in range.
GroupFamily make_group_family(std::string name, std::int32_t world_size,
                              std::vector<std::vector<std::int32_t>> instances);

// Structural checks: deps point backwards, streams and groups exist, every rank that issues
// a collective belongs to an instance of its family, and all members of a group instance
// issue the same sequence of collectives (kind, bytes). Returns a list of problems (empty
// when the program is well formed).
std::vector<std::string> validate(const Program& program);

}  // namespace program
