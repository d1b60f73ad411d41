// backend::WorkSplit (see work_split.h).
#include "backend/work_split.h"

#include <mpi.h>

#include <climits>
#include <cstdint>

#include "backend/executor.h"

namespace backend {

WorkSplit WorkSplit::world() {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return WorkSplit(rank, size);
}

std::vector<bool> WorkSplit::meet(bool ready) const {
  *met_ = true;
  if (size_ == 1) return {ready};
  const int mine = ready ? 1 : 0;
  std::vector<int> all(static_cast<std::size_t>(size_));
  MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
  return {all.begin(), all.end()};
}

std::vector<std::string> WorkSplit::gather(std::vector<std::string> results) const {
  if (size_ == 1) return results;
  const std::size_t items = results.size();
  // Every item's length: each process knows its own items' and 0 for the others'; the sum is all.
  std::vector<std::int64_t> lengths(items, 0);
  for (std::size_t i = 0; i < items; ++i) {
    if (mine(i)) lengths[i] = static_cast<std::int64_t>(results[i].size());
  }
  MPI_Allreduce(MPI_IN_PLACE, lengths.data(), static_cast<int>(items), MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  // Each process sends its items back to back, in item order.
  std::vector<std::int64_t> share(static_cast<std::size_t>(size_), 0);
  for (std::size_t i = 0; i < items; ++i) share[i % static_cast<std::size_t>(size_)] += lengths[i];
  std::vector<int> counts(share.size()), offsets(share.size());
  std::int64_t total = 0;
  for (std::size_t p = 0; p < share.size(); ++p) {
    if (total + share[p] > INT_MAX) {  // MPI's counts and offsets are ints
      throw ExecutionError("the gathered results are over 2 GiB: split the work into smaller runs");
    }
    counts[p] = static_cast<int>(share[p]);
    offsets[p] = static_cast<int>(total);
    total += share[p];
  }
  std::string mine_packed;
  mine_packed.reserve(static_cast<std::size_t>(share[static_cast<std::size_t>(rank_)]));
  for (std::size_t i = 0; i < items; ++i) {
    if (mine(i)) mine_packed += results[i];
  }
  std::string all(static_cast<std::size_t>(total), '\0');
  MPI_Allgatherv(mine_packed.data(), counts[static_cast<std::size_t>(rank_)], MPI_BYTE, all.data(), counts.data(),
                 offsets.data(), MPI_BYTE, MPI_COMM_WORLD);
  std::vector<std::int64_t> cursor(offsets.begin(), offsets.end());
  for (std::size_t i = 0; i < items; ++i) {
    std::int64_t& at = cursor[i % static_cast<std::size_t>(size_)];
    results[i] = all.substr(static_cast<std::size_t>(at), static_cast<std::size_t>(lengths[i]));
    at += lengths[i];
  }
  return results;
}

}  // namespace backend
