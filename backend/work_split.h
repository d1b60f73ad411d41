// backend::WorkSplit — independent work shared out over the processes one mpirun started, so
// that `mpirun -np N dtsim sweep|search` spreads its simulations over N processes (hosts) and
// every process ends with the one result a single process would have computed.
//
// Before the first exchange the processes meet: each says whether it got there. A process that
// fails on the way (a scenario file missing on its host) meets the others from its error path,
// so that they stop too instead of waiting for it in the exchange.
//
// Process r of N takes items r, r + N, r + 2N, … (round robin: neighbouring points of a sweep
// or a ranking cost alike, so the shares come out alike). gather() gives every process every
// item's result, as bytes, in item order (one MPI_Allreduce of the lengths, one
// MPI_Allgatherv of the bytes), so that each process holds the whole result and the first one
// writes it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace backend {

class WorkSplit {
 public:
  // One process, no MPI: every item is its own.
  WorkSplit() = default;
  // The processes of MPI_COMM_WORLD (inside an MpiSession).
  static WorkSplit world();

  int size() const { return size_; }
  bool leader() const { return rank_ == 0; }
  // Every process calls this once, before any exchange: whether it got this far (false from a
  // process's error path). Returns each process's answer, in rank order. Copies of a split
  // share whether the meeting happened (met()).
  std::vector<bool> meet(bool ready) const;
  bool met() const { return *met_; }
  bool mine(std::size_t item) const { return static_cast<int>(item % static_cast<std::size_t>(size_)) == rank_; }
  // `results` has an entry per item, this process's filled in (the others' are not read);
  // returns every item's, the same on every process. Throws ExecutionError when all of them
  // come to over 2 GiB (MPI's counts are ints).
  std::vector<std::string> gather(std::vector<std::string> results) const;

 private:
  WorkSplit(int rank, int size) : rank_(rank), size_(size) {}
  int rank_ = 0;
  int size_ = 1;
  std::shared_ptr<bool> met_ = std::make_shared<bool>(false);
};

}  // namespace backend
