// Packet (chunk-level) network model: every step of every schedule phase is simulated
// explicitly. Each transfer of a step is cut into chunks (network.chunk_kib); chunks travel
// their route hop by hop, each link a FIFO server that sends one chunk at a time at its
// effective bandwidth. Switching is cut-through, as NVSwitch and InfiniBand/Ethernet switches
// do: a chunk's head moves on to the next link after the link's latency, and the next link
// finishes it no sooner than its tail arrives. Alone on a path a chunk thus takes
// Σ latency + size / bottleneck bandwidth — the α-β cost — and a transfer's chunks pipeline.
// With collectives.library = "nccl" a step's α is NCCL's latency per step (comm_planner.h), not
// the links': a step's chunks then leave after what NCCL's latency adds to the links' own (its
// kernel launch, protocol and proxy costs), so a step alone takes NCCL's α plus the data term,
// as in the other models.
// A transfer held to a rate (CommPlan::transfer_rate_cap: an NCCL send's CTAs) paces its chunks
// at that rate instead of queueing them all at once.
// A step ends when its last chunk arrives; the collective's next step starts then. Contention
// is whatever the FIFO queues produce, across collectives too. Each member's steps can be
// drawn on the timeline.
#pragma once

#include <vector>

#include "sim/net/comm_planner.h"
#include "sim/net/running_comm.h"

namespace sim {

class PacketNetwork : public NetworkModel {
 public:
  PacketNetwork(Engine& engine, const topology::Cluster& cluster, NetworkOptions options);
  std::string_view name() const override { return "packet"; }
  void start(const CommRequest& request, std::function<void(const CommResult&)> done) override;

  std::uint64_t chunk_hops() const { return chunk_hops_; }

 private:
  struct Comm : RunningComm {
    using RunningComm::RunningComm;
    std::int32_t step = 0;
    std::uint64_t chunks_in_flight = 0;
    Time step_start;
    std::vector<Time> member_step_end;  // last chunk a member sent or received this step
    std::vector<std::uint8_t> member_busy;  // the member sent or received in this step
  };

  // One chunk on its way: its head is at hop `hop` of `path`, its tail follows at `tail`.
  // Events carry only the chunk's index, so that their callbacks need no allocation.
  struct Chunk {
    const topology::LinkId* path;
    std::uint32_t path_length;
    std::uint32_t hop;
    double bytes;
    Time tail;
    std::uint32_t comm;
    std::uint32_t transfer;
  };
  // What a chunk needs of a link, in one place: the links are read on every hop.
  struct LinkQueue {
    Time free_at;      // FIFO: when the link can start its next chunk
    double bandwidth;  // effective, bytes/s
    Time latency;
  };

  void start_step(std::uint32_t comm);
  void send_chunks(std::uint32_t comm);
  void end_step(std::uint32_t comm);
  // The head of chunk `chunk` reaches hop chunks_[chunk].hop of its path now.
  void arrive(std::uint32_t chunk);
  void deliver(std::uint32_t chunk);

  Engine& engine_;
  CommPlanner planner_;
  std::vector<LinkQueue> links_;
  SlotPool<Comm> comms_;
  SlotPool<Chunk> chunks_;
  std::uint64_t chunk_hops_ = 0;
};

}  // namespace sim
