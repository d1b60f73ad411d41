// --verify on CPU ranks: crafted buffer contents that make every collective's and transfer's
// result exactly predictable, and the tensor-parallel forward of one layer (attention and MLP
// blocks) checked against the unsharded computation.
//
// Reductions use small integers, exact in float: member m's element i is (m + 1) + (i mod 7),
// so a sum over n members is n(n + 1)/2 + n·(i mod 7). Byte-copying collectives carry a hash
// of (source, i), so every byte names where it came from. With verification, result buffers
// are poisoned first, so an op that moves nothing cannot pass on an earlier op's data.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <optional>
#include <string>

#include "backend/executor.h"
#include "strategies/program/program.h"

namespace backend::verification {

// Fills what member `member` of a group of `size` sends for this collective (`in`, and for a
// broadcast the root's buffer).
void fill_collective(const program::CollectiveOp& collective, int member, int size, char* in);
// Whether check_collective checks `member`'s result of this collective: not a barrier's (no
// result), a parameter server's push or pull (run as dtsim's schedules), nor a reduce's off
// its root (no result there).
bool checks_result(const program::CollectiveOp& collective, int member);
// The first wrong element of the result on `member`, described; none when all are right (or
// when checks_result is false).
std::optional<std::string> check_collective(const program::CollectiveOp& collective, int member, int size,
                                            const char* in, const char* out);

void fill_transfer(int sender, std::int64_t bytes, char* buffer);
std::optional<std::string> check_transfer(int sender, std::int64_t bytes, const char* buffer);

// Megatron's MLP forward on a tensor-parallel group — column-parallel X·W1, GeLU, row-parallel
// ·W2, all-reduce — against X·W1 → GeLU → ·W2 unsharded, on seeded random data; returns the
// largest |difference| over the largest |reference| value.
double tensor_parallel_mlp_error(MPI_Comm group, std::int64_t tokens, std::int64_t hidden, std::int64_t ffn);

// Megatron's attention forward on a tensor-parallel group — each member's heads from its
// columns of Wq, Wk, Wv, softmax(Q·Kᵀ/√d)·V per head, its rows of Wo, all-reduce — against all
// heads unsharded; the same error measure.
double tensor_parallel_attention_error(MPI_Comm group, std::int64_t tokens, std::int64_t hidden, std::int64_t heads);

// An expert-parallel MoE layer's forward on an ep group — each member routes its tokens
// (softmax over the top-k router logits), dispatches each (token, expert) row to the member
// holding that expert (MPI_Alltoallv), the experts run GeLU(x·W1)·W2 on what they received,
// and a second all-to-all combines the outputs back, weighted by the gates — against every
// token through its experts unsharded; the same error measure over all members' tokens.
double expert_parallel_moe_error(MPI_Comm group, std::int64_t tokens, std::int64_t hidden, std::int64_t experts,
                                 std::int64_t top_k, std::int64_t expert_ffn);

// Context-parallel attention over a cp group against all heads over the whole sequence
// unsharded, on seeded random Q, K, V (`sequence` tokens, causal or not); the same error
// measure over all members' tokens.
//   ring     Megatron-Core's layout (member i holds sequence chunks i and 2·cp−1−i): each
//            member's queries against its own K,V block, then against each block passed round
//            the ring (MPI_Sendrecv), the partial results merged by running softmax
//            (maximum, sum and output rescaled per block, as FlashAttention and ring
//            attention do), the causal mask by each token's global position;
//   ulysses  each member holds s/cp consecutive tokens of every head; an all-to-all gives it
//            all s tokens of heads/cp heads, attention runs there, a second all-to-all
//            returns the output to the member's tokens;
//   all_gather  the ring's layout; K and V all-gathered (MPI_Allgather), the member's queries
//            against every token's keys in one pass.
double context_parallel_attention_error(MPI_Comm group, ContextParallelKind kind, std::int64_t sequence,
                                        std::int64_t hidden, std::int64_t heads, bool causal);

}  // namespace backend::verification
