// Chunk-by-chunk simulation of schedule steps through FIFO links (see packet_network.h).
#include "sim/net/packet_network.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace sim {

PacketNetwork::PacketNetwork(Engine& engine, const topology::Cluster& cluster, NetworkOptions options)
    : engine_(engine), planner_(cluster, std::move(options)) {
  links_.reserve(cluster.link_count());
  for (topology::LinkId id = 0; id < cluster.link_count(); ++id) {
    const topology::LinkSpec& spec = cluster.link(id).spec;
    links_.push_back({Time::zero(), spec.effective_bandwidth(), Time::from_seconds(spec.latency)});
  }
}

void PacketNetwork::start(const CommRequest& request, std::function<void(const CommResult&)> done) {
  const CommPlan& plan = planner_.plan(request);
  const std::uint32_t id = comms_.acquire(Comm(plan, engine_.now(), std::move(done)));
  comms_[id].result.latency_seconds = plan.latency_seconds;  // the α terms the chunks also pay
  start_step(id);
}

void PacketNetwork::start_step(std::uint32_t id) {
  Comm& comm = comms_[id];
  const auto& phases = comm.plan->schedule.phases;
  while (comm.phase < phases.size() && (phases[comm.phase].steps == 0 || phases[comm.phase].transfers.empty())) {
    ++comm.phase;
  }
  if (comm.phase == phases.size()) {
    auto [done, result] = comm.finish(engine_.now());
    comms_.release(id);
    // Through the engine, so that a collective never completes inside the start() that began it.
    engine_.schedule_after(Time::zero(), [done = std::move(done), result = std::move(result)] { done(result); });
    return;
  }
  comm.step_start = engine_.now();
  comm.member_step_end.assign(comm.plan->endpoints.size(), engine_.now());
  comm.member_busy.assign(comm.plan->endpoints.size(), 0);
  const PhaseCost& cost = comm.plan->costs[comm.phase];
  const double wait_s =
      cost.step_latency_s - cost.path_latency_s;  // what NCCL adds to the links' α
  if (wait_s > 0) {
    engine_.schedule_after(Time::from_seconds(wait_s), [this, id] { send_chunks(id); });
  } else {
    send_chunks(id);
  }
}

void PacketNetwork::send_chunks(std::uint32_t id) {
  Comm& comm = comms_[id];
  const collectives::Phase& phase = comm.plan->schedule.phases[comm.phase];
  // Chunks of at most network.chunk_kib, and at least kMinPackets per transfer (down to
  // kSmallestPacket) so that transfers sharing a link interleave nearly as finely as a fluid.
  constexpr double kMinPackets = 8;
  constexpr double kSmallestPacket = 4096;
  const double transfer_bytes = comm.plan->wire_bytes_per_transfer(comm.phase);
  const double chunk = std::min(static_cast<double>(planner_.options().chunk_bytes),
                                std::max(kSmallestPacket, transfer_bytes / kMinPackets));
  const auto chunks = static_cast<std::uint32_t>(std::max(1.0, std::ceil(transfer_bytes / chunk)));
  const double chunk_bytes = transfer_bytes / chunks;
  comm.chunks_in_flight = static_cast<std::uint64_t>(chunks) * phase.transfers.size();
  // Round-robin over transfers so that transfers sharing a first link interleave fairly.
  const auto& paths = comm.plan->paths[comm.phase];
  const double rate_cap = comm.plan->transfer_rate_cap;
  for (std::uint32_t c = 0; c < chunks; ++c) {
    for (std::uint32_t t = 0; t < phase.transfers.size(); ++t) {
      const topology::Path* path = paths[t];
      auto send = [this, path, chunk_bytes, id, t] {
        arrive(chunks_.acquire(Chunk{path->data(), static_cast<std::uint32_t>(path->size()), 0,
                                     chunk_bytes, engine_.now(), id, t}));
      };
      // A transfer held to a rate (an NCCL send's CTAs) releases chunk c so that it leaves its
      // first link, if free, when c + 1 chunks at that rate would have: the sender paces itself
      // and leaves the links' spare time to other traffic.
      const double release_s =
          std::isfinite(rate_cap) && !path->empty()
              ? (c + 1) * chunk_bytes / rate_cap - chunk_bytes / links_[path->front()].bandwidth
              : 0;
      if (release_s > 0) {
        engine_.schedule_after(Time::from_seconds(release_s), send);
      } else {
        send();
      }
    }
  }
}

void PacketNetwork::arrive(std::uint32_t index) {
  Chunk& chunk = chunks_[index];
  if (chunk.hop == chunk.path_length) {  // the head is at the destination; the chunk is in when its tail is
    if (chunk.tail <= engine_.now() && chunk.hop > 0) {  // (an empty path goes through an event: no recursion)
      deliver(index);
    } else {
      engine_.schedule_at(chunk.tail, [this, index] { deliver(index); });
    }
    return;
  }
  LinkQueue& link = links_[chunk.path[chunk.hop]];
  const Time begin = max(engine_.now(), link.free_at);
  const Time end = max(begin + Time::from_seconds(chunk.bytes / link.bandwidth), chunk.tail);
  link.free_at = end;
  if (++chunk_hops_ > planner_.options().packet_chunk_hop_limit) {
    throw NetworkWorkLimit(fmt::format(
        "the packet model would move more than {} chunks link by link: raise network.chunk_kib (now {}) or use "
        "network.model = \"flow\"",
        planner_.options().packet_chunk_hop_limit, planner_.options().chunk_bytes / 1024));
  }
  chunk.tail = end + link.latency;
  ++chunk.hop;
  engine_.schedule_at(begin + link.latency, [this, index] { arrive(index); });
}

void PacketNetwork::deliver(std::uint32_t index) {
  const std::uint32_t id = chunks_[index].comm;
  const std::uint32_t transfer = chunks_[index].transfer;
  chunks_.release(index);
  Comm& comm = comms_[id];
  const collectives::Transfer& edge = comm.plan->schedule.phases[comm.phase].transfers[transfer];
  const Time now = engine_.now();
  comm.member_step_end[edge.src] = max(comm.member_step_end[edge.src], now);
  comm.member_step_end[edge.dst] = max(comm.member_step_end[edge.dst], now);
  comm.member_busy[edge.src] = comm.member_busy[edge.dst] = 1;
  if (--comm.chunks_in_flight == 0) end_step(id);
}

void PacketNetwork::end_step(std::uint32_t id) {
  Comm& comm = comms_[id];
  const collectives::Phase& phase = comm.plan->schedule.phases[comm.phase];
  if (planner_.options().record_steps) {
    for (std::size_t m = 0; m < comm.member_step_end.size(); ++m) {
      if (!comm.member_busy[m]) continue;
      comm.result.steps.push_back({static_cast<std::int32_t>(m), phase.name, comm.step, comm.step_start,
                                   comm.member_step_end[m]});
    }
  }
  if (++comm.step == phase.steps) {
    comm.step = 0;
    ++comm.phase;
  }
  start_step(id);
}

}  // namespace sim
