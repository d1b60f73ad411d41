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

}  // namespace backend::verification
