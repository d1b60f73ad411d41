// The network interface of the simulator: collectives and point-to-point transfers go in,
// completion callbacks come out on the engine's clock. Models (analytic α-β now; the
// congestion-aware flow model and the per-chunk packet model later) swap behind it by one
// scenario key, `network.model`.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/engine.h"
#include "strategies/program/program.h"
#include "topology/cluster.h"

namespace sim {

struct CommRequest {
  std::optional<program::CollectiveKind> kind;  // empty: point-to-point
  program::Algorithm algorithm = program::Algorithm::kAuto;
  std::int64_t bytes = 0;
  std::vector<std::int32_t> endpoints;  // cluster endpoints of the members, in group order
                                        // (point-to-point: sender, receiver)
  std::int32_t root = 0;
  std::int32_t ps_servers = 0;
};

struct CommResult {
  Time start;
  Time end;
  program::Algorithm algorithm = program::Algorithm::kRing;
  double latency_seconds = 0;    // α part of the duration
  double bandwidth_seconds = 0;  // bytes/bandwidth part of the duration
  std::vector<double> bytes_sent;  // per member, in group order
};

// Options every network model understands.
struct NetworkOptions {
  std::string model = "analytic";
  // Rings a ring collective runs in parallel ("channels"). 0: one per NIC of a node, as NCCL
  // opens at least one ring per NIC so that every NIC carries traffic; 1: the textbook
  // single ring.
  std::int32_t ring_channels = 0;
};

class NetworkModel {
 public:
  virtual ~NetworkModel() = default;
  virtual std::string_view name() const = 0;
  // Starts the communication at the engine's current time; calls `done` when it finishes.
  virtual void start(const CommRequest& request, std::function<void(const CommResult&)> done) = 0;
};

// Names accepted by make_network_model.
std::vector<std::string> network_model_names();
// Throws std::invalid_argument for an unknown model name.
std::unique_ptr<NetworkModel> make_network_model(const NetworkOptions& options, Engine& engine,
                                                 const topology::Cluster& cluster);

// Rings for a group, as member indices: members grouped by node (nodes in order of first
// appearance, members by GPU index), so each ring crosses every node boundary once. Ring c
// enters each node at its c-th member, so the C rings leave and enter a node through C
// different GPUs and NICs (NCCL's channels). Identical rings are merged: a group with one
// member per node, or inside one node, gets one ring.
std::vector<std::vector<std::int32_t>> topology_aware_rings(const topology::Cluster& cluster,
                                                            const std::vector<std::int32_t>& endpoints,
                                                            std::int32_t channels);

}  // namespace sim
