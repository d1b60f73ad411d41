// Crafted contents and their checks (see verification.h).
#include "backend/mpi/verification.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <random>
#include <vector>

namespace backend::verification {
namespace {

float reduce_input(int member, std::int64_t element) { return static_cast<float>(member + 1 + element % 7); }
float reduced(int size, std::int64_t element) {
  return static_cast<float>(size * (size + 1) / 2 + size * (element % 7));
}
// A byte no shifted or misrouted block reproduces: a mixing hash (MurmurHash3's finaliser) of
// (source, element).
char pattern(std::int64_t element, std::int64_t source) {
  std::uint64_t x = static_cast<std::uint64_t>(source) * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(element);
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  return static_cast<char>(x & 0xFF);
}

float* floats(char* bytes) { return reinterpret_cast<float*>(bytes); }
const float* floats(const char* bytes) { return reinterpret_cast<const float*>(bytes); }

std::optional<std::string> check_sums(const float* values, std::int64_t count, std::int64_t first_element, int size) {
  for (std::int64_t i = 0; i < count; ++i) {
    const float expected = reduced(size, first_element + i);
    if (values[i] != expected) return fmt::format("element {}: expected {}, got {}", first_element + i, expected, values[i]);
  }
  return std::nullopt;
}

std::optional<std::string> check_pattern(const char* bytes, std::int64_t count, std::int64_t offset, std::int64_t source) {
  for (std::int64_t i = 0; i < count; ++i) {
    if (bytes[offset + i] != pattern(i, source)) {
      return fmt::format("byte {}: expected {}, got {}", offset + i, static_cast<int>(pattern(i, source)),
                         static_cast<int>(bytes[offset + i]));
    }
  }
  return std::nullopt;
}

}  // namespace

void fill_collective(const program::CollectiveOp& collective, int member, int size, char* in) {
  const std::int64_t bytes = collective.bytes;
  const std::int64_t share = bytes / size;
  switch (collective.kind) {
    case program::CollectiveKind::kAllReduce:
    case program::CollectiveKind::kReduce:
    case program::CollectiveKind::kReduceScatter:
      for (std::int64_t i = 0; i < bytes / 4; ++i) floats(in)[i] = reduce_input(member, i);
      break;
    case program::CollectiveKind::kAllGather:
      for (std::int64_t i = 0; i < share; ++i) in[i] = pattern(i, member);
      break;
    case program::CollectiveKind::kBroadcast:
      for (std::int64_t i = 0; i < bytes; ++i) in[i] = member == collective.root ? pattern(i, collective.root) : 0;
      break;
    case program::CollectiveKind::kAllToAll:
      for (int block = 0; block < size; ++block) {
        for (std::int64_t i = 0; i < share; ++i) in[block * share + i] = pattern(i, std::int64_t{member} * 64 + block);
      }
      break;
    default:
      break;
  }
}

bool checks_result(const program::CollectiveOp& collective, int member) {
  switch (collective.kind) {
    case program::CollectiveKind::kAllReduce:
    case program::CollectiveKind::kReduceScatter:
    case program::CollectiveKind::kAllGather:
    case program::CollectiveKind::kBroadcast:
    case program::CollectiveKind::kAllToAll:
      return true;
    case program::CollectiveKind::kReduce:
      return member == collective.root;
    case program::CollectiveKind::kBarrier:
    case program::CollectiveKind::kPsPush:
    case program::CollectiveKind::kPsPull:
      return false;
  }
  return false;
}

std::optional<std::string> check_collective(const program::CollectiveOp& collective, int member, int size,
                                            const char* in, const char* out) {
  if (!checks_result(collective, member)) return std::nullopt;
  const std::int64_t bytes = collective.bytes;
  const std::int64_t share = bytes / size;
  switch (collective.kind) {
    case program::CollectiveKind::kAllReduce:
      return check_sums(floats(out), bytes / 4, 0, size);
    case program::CollectiveKind::kReduce:
      return check_sums(floats(out), bytes / 4, 0, size);
    case program::CollectiveKind::kReduceScatter: {
      const std::int64_t chunk = bytes / 4 / size;
      return check_sums(floats(out), chunk, member * chunk, size);
    }
    case program::CollectiveKind::kAllGather:
      for (int source = 0; source < size; ++source) {
        if (auto wrong = check_pattern(out, share, source * share, source)) return wrong;
      }
      return std::nullopt;
    case program::CollectiveKind::kBroadcast:
      return check_pattern(in, bytes, 0, collective.root);
    case program::CollectiveKind::kAllToAll:
      for (int source = 0; source < size; ++source) {
        if (auto wrong = check_pattern(out, share, source * share, std::int64_t{source} * 64 + member)) return wrong;
      }
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

void fill_transfer(int sender, std::int64_t bytes, char* buffer) {
  for (std::int64_t i = 0; i < bytes; ++i) buffer[i] = pattern(i, sender);
}

std::optional<std::string> check_transfer(int sender, std::int64_t bytes, const char* buffer) {
  return check_pattern(buffer, bytes, 0, sender);
}

namespace {

std::vector<float> random_matrix(std::mt19937& random, std::int64_t count) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> values(static_cast<std::size_t>(count));
  for (float& value : values) value = uniform(random);
  return values;
}

// out[tokens × d] = softmax(q·kᵀ / √d) · v for one head; q, k, v are column blocks of width d
// in row-major matrices `ld` wide.
void attention_head(const float* q, const float* k, const float* v, int ld, int tokens, int d, float* out, int ld_out) {
  std::vector<float> scores(static_cast<std::size_t>(tokens) * tokens);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, tokens, tokens, d, 1.0f / std::sqrt(static_cast<float>(d)), q, ld,
              k, ld, 0, scores.data(), tokens);
  for (int row = 0; row < tokens; ++row) {
    float* line = scores.data() + static_cast<std::ptrdiff_t>(row) * tokens;
    const float largest = *std::max_element(line, line + tokens);
    float sum = 0;
    for (int c = 0; c < tokens; ++c) sum += line[c] = std::exp(line[c] - largest);
    for (int c = 0; c < tokens; ++c) line[c] /= sum;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, tokens, d, tokens, 1, scores.data(), tokens, v, ld, 0, out, ld_out);
}

// Largest |difference| over largest |reference|, after summing the members' partial outputs.
double relative_error(MPI_Comm group, const std::vector<float>& reference, std::vector<float>& partial) {
  MPI_Allreduce(MPI_IN_PLACE, partial.data(), static_cast<int>(partial.size()), MPI_FLOAT, MPI_SUM, group);
  float largest = 0, difference = 0;
  for (std::size_t i = 0; i < reference.size(); ++i) {
    largest = std::max(largest, std::abs(reference[i]));
    difference = std::max(difference, std::abs(reference[i] - partial[i]));
  }
  return largest > 0 ? difference / largest : difference;
}

}  // namespace

double tensor_parallel_attention_error(MPI_Comm group, std::int64_t tokens, std::int64_t hidden, std::int64_t heads) {
  int member = 0, size = 1;
  MPI_Comm_rank(group, &member);
  MPI_Comm_size(group, &size);
  std::mt19937 random(20261130);
  const auto t = static_cast<int>(tokens), h = static_cast<int>(hidden), d = static_cast<int>(hidden / heads);
  const std::vector<float> x = random_matrix(random, tokens * hidden), wqkv = random_matrix(random, hidden * 3 * hidden),
                           wo = random_matrix(random, hidden * hidden);
  // qkv[tokens × 3h] = X · [Wq | Wk | Wv]; head j uses columns j·d … of each third.
  std::vector<float> qkv(static_cast<std::size_t>(tokens * 3 * hidden));
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, 3 * h, h, 1, x.data(), h, wqkv.data(), 3 * h, 0, qkv.data(), 3 * h);
  auto heads_output = [&](int first_head, int count) {
    std::vector<float> context(static_cast<std::size_t>(tokens) * count * d);
    for (int j = 0; j < count; ++j) {
      const int column = (first_head + j) * d;
      attention_head(qkv.data() + column, qkv.data() + h + column, qkv.data() + 2 * h + column, 3 * h, t, d,
                     context.data() + static_cast<std::ptrdiff_t>(j) * d, count * d);
    }
    return context;
  };
  // Unsharded: all heads, then · Wo.
  const std::vector<float> all_heads = heads_output(0, static_cast<int>(heads));
  std::vector<float> reference(static_cast<std::size_t>(tokens * hidden));
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, h, h, 1, all_heads.data(), h, wo.data(), h, 0, reference.data(), h);
  // This member's heads (its columns of Wq, Wk, Wv), then its rows of Wo: a partial output.
  const int mine = static_cast<int>(heads) / size, first = member * mine;
  const std::vector<float> my_heads = heads_output(first, mine);
  std::vector<float> partial(reference.size());
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, h, mine * d, 1, my_heads.data(), mine * d,
              wo.data() + static_cast<std::ptrdiff_t>(first) * d * h, h, 0, partial.data(), h);
  return relative_error(group, reference, partial);
}

double tensor_parallel_mlp_error(MPI_Comm group, std::int64_t tokens, std::int64_t hidden, std::int64_t ffn) {
  int member = 0, size = 1;
  MPI_Comm_rank(group, &member);
  MPI_Comm_size(group, &size);
  // Every member draws the same full matrices and keeps its shard.
  std::mt19937 random(20261129);
  const std::vector<float> x = random_matrix(random, tokens * hidden), w1 = random_matrix(random, hidden * ffn),
                           w2 = random_matrix(random, ffn * hidden);
  auto gelu = [](std::vector<float>& values) {
    for (float& v : values) v = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
  };
  const auto t = static_cast<int>(tokens), h = static_cast<int>(hidden), f = static_cast<int>(ffn);

  // Unsharded: Y = GeLU(X·W1)·W2.
  std::vector<float> full(static_cast<std::size_t>(tokens * ffn)), reference(static_cast<std::size_t>(tokens * hidden));
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, f, h, 1, x.data(), h, w1.data(), f, 0, full.data(), f);
  gelu(full);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, h, f, 1, full.data(), f, w2.data(), h, 0, reference.data(), h);

  // Sharded: columns [begin, begin + part) of W1, the same rows of W2; partial sums all-reduced.
  const int part = f / size, begin = member * part;
  std::vector<float> shard(static_cast<std::size_t>(tokens * part)), output(reference.size());
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, part, h, 1, x.data(), h, w1.data() + begin, f, 0,
              shard.data(), part);
  gelu(shard);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, h, part, 1, shard.data(), part,
              w2.data() + static_cast<std::ptrdiff_t>(begin) * h, h, 0, output.data(), h);
  return relative_error(group, reference, output);
}

namespace {

int rank_in(MPI_Comm group) {
  int member = 0;
  MPI_Comm_rank(group, &member);
  return member;
}
int size_of(MPI_Comm group) {
  int size = 1;
  MPI_Comm_size(group, &size);
  return size;
}

// Largest |difference| over largest |reference| over every member's values.
double relative_error_over(MPI_Comm group, const std::vector<float>& reference, const std::vector<float>& result) {
  double extremes[2] = {0, 0};  // largest |reference|, largest |difference|
  for (std::size_t i = 0; i < reference.size(); ++i) {
    extremes[0] = std::max(extremes[0], static_cast<double>(std::abs(reference[i])));
    extremes[1] = std::max(extremes[1], static_cast<double>(std::abs(reference[i] - result[i])));
  }
  MPI_Allreduce(MPI_IN_PLACE, extremes, 2, MPI_DOUBLE, MPI_MAX, group);
  return extremes[0] > 0 ? extremes[1] / extremes[0] : extremes[1];
}

void gelu_in_place(float* values, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    const float v = values[i];
    values[i] = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
}

}  // namespace

double expert_parallel_moe_error(MPI_Comm group, std::int64_t tokens, std::int64_t hidden, std::int64_t experts,
                                 std::int64_t top_k, std::int64_t expert_ffn) {
  const int member = rank_in(group), size = size_of(group);
  const auto t = static_cast<int>(tokens), h = static_cast<int>(hidden), e = static_cast<int>(experts),
             k = static_cast<int>(top_k), f = static_cast<int>(expert_ffn);
  const int local_experts = e / size;
  // Every member draws the same data: all members' tokens, the router and every expert.
  std::mt19937 random(20261202);
  const std::vector<float> all_tokens = random_matrix(random, std::int64_t{size} * tokens * hidden),
                           router = random_matrix(random, hidden * experts),
                           w1 = random_matrix(random, experts * hidden * expert_ffn),
                           w2 = random_matrix(random, experts * expert_ffn * hidden);
  const float* x = all_tokens.data() + static_cast<std::ptrdiff_t>(member) * t * h;
  const auto expert_forward = [&](int expert, const float* row, float* out) {  // GeLU(row·W1)·W2
    std::vector<float> inner(static_cast<std::size_t>(f));
    cblas_sgemv(CblasRowMajor, CblasTrans, h, f, 1, w1.data() + static_cast<std::ptrdiff_t>(expert) * h * f, f, row, 1, 0,
                inner.data(), 1);
    gelu_in_place(inner.data(), inner.size());
    cblas_sgemv(CblasRowMajor, CblasTrans, f, h, 1, w2.data() + static_cast<std::ptrdiff_t>(expert) * f * h, h,
                inner.data(), 1, 0, out, 1);
  };
  // Routing: the k largest router logits of each token, their softmax as the gates.
  std::vector<float> logits(static_cast<std::size_t>(t) * e);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, e, h, 1, x, h, router.data(), e, 0, logits.data(), e);
  std::vector<int> chosen(static_cast<std::size_t>(t) * k);
  std::vector<float> gates(chosen.size());
  for (int token = 0; token < t; ++token) {
    const float* line = logits.data() + static_cast<std::ptrdiff_t>(token) * e;
    std::vector<int> order(static_cast<std::size_t>(e));
    for (int i = 0; i < e; ++i) order[static_cast<std::size_t>(i)] = i;
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int a, int b) { return line[a] > line[b]; });
    float sum = 0;
    for (int j = 0; j < k; ++j) sum += std::exp(line[order[static_cast<std::size_t>(j)]] - line[order[0]]);
    for (int j = 0; j < k; ++j) {
      const std::size_t at = static_cast<std::size_t>(token) * k + j;
      chosen[at] = order[static_cast<std::size_t>(j)];
      gates[at] = std::exp(line[chosen[at]] - line[order[0]]) / sum;
    }
  }
  // Unsharded: each token through its k experts.
  std::vector<float> reference(static_cast<std::size_t>(t) * h, 0.0f), out(static_cast<std::size_t>(h));
  for (int token = 0; token < t; ++token) {
    for (int j = 0; j < k; ++j) {
      const std::size_t at = static_cast<std::size_t>(token) * k + j;
      expert_forward(chosen[at], x + static_cast<std::ptrdiff_t>(token) * h, out.data());
      for (int c = 0; c < h; ++c) reference[static_cast<std::size_t>(token) * h + c] += gates[at] * out[c];
    }
  }
  // Dispatch: the (token, expert) rows for each member, in member order.
  std::vector<std::vector<std::size_t>> routed(static_cast<std::size_t>(size));  // indices into chosen
  for (std::size_t at = 0; at < chosen.size(); ++at) routed[static_cast<std::size_t>(chosen[at] / local_experts)].push_back(at);
  std::vector<int> send_rows(static_cast<std::size_t>(size)), receive_rows(send_rows.size());
  for (int m = 0; m < size; ++m) send_rows[static_cast<std::size_t>(m)] = static_cast<int>(routed[static_cast<std::size_t>(m)].size());
  MPI_Alltoall(send_rows.data(), 1, MPI_INT, receive_rows.data(), 1, MPI_INT, group);
  const auto offsets_of = [](const std::vector<int>& counts, int scale) {
    std::vector<int> offsets(counts.size(), 0), scaled(counts.size());
    for (std::size_t m = 0; m < counts.size(); ++m) {
      scaled[m] = counts[m] * scale;
      if (m > 0) offsets[m] = offsets[m - 1] + scaled[m - 1];
    }
    return std::pair{scaled, offsets};
  };
  std::vector<float> send(chosen.size() * static_cast<std::size_t>(h));
  std::vector<int> send_experts(chosen.size());
  std::size_t row = 0;
  for (const auto& rows : routed) {
    for (const std::size_t at : rows) {
      std::copy_n(x + static_cast<std::ptrdiff_t>(at / static_cast<std::size_t>(k)) * h, h,
                  send.begin() + static_cast<std::ptrdiff_t>(row * static_cast<std::size_t>(h)));
      send_experts[row++] = chosen[at];
    }
  }
  int received = 0;
  for (const int rows : receive_rows) received += rows;
  std::vector<float> arrived(static_cast<std::size_t>(received) * h), expert_out(arrived.size(), 0.0f);
  std::vector<int> arrived_experts(static_cast<std::size_t>(received));
  const auto [send_counts, send_offsets] = offsets_of(send_rows, h);
  const auto [receive_counts, receive_offsets] = offsets_of(receive_rows, h);
  MPI_Alltoallv(send.data(), send_counts.data(), send_offsets.data(), MPI_FLOAT, arrived.data(), receive_counts.data(),
                receive_offsets.data(), MPI_FLOAT, group);
  const auto [send_ids, send_id_offsets] = offsets_of(send_rows, 1);
  const auto [receive_ids, receive_id_offsets] = offsets_of(receive_rows, 1);
  MPI_Alltoallv(send_experts.data(), send_ids.data(), send_id_offsets.data(), MPI_INT, arrived_experts.data(),
                receive_ids.data(), receive_id_offsets.data(), MPI_INT, group);
  // The experts this member holds, on what arrived (a row for another member's expert is a
  // misrouted dispatch: it gets no output); then the combine all-to-all back.
  const int first_local = member * local_experts;
  for (int r = 0; r < received; ++r) {
    const int expert = arrived_experts[static_cast<std::size_t>(r)];
    if (expert < first_local || expert >= first_local + local_experts) continue;
    expert_forward(expert, arrived.data() + static_cast<std::ptrdiff_t>(r) * h,
                   expert_out.data() + static_cast<std::ptrdiff_t>(r) * h);
  }
  std::vector<float> returned(send.size());
  MPI_Alltoallv(expert_out.data(), receive_counts.data(), receive_offsets.data(), MPI_FLOAT, returned.data(),
                send_counts.data(), send_offsets.data(), MPI_FLOAT, group);
  std::vector<float> combined(reference.size(), 0.0f);
  row = 0;
  for (const auto& rows : routed) {
    for (const std::size_t at : rows) {
      const std::size_t token = at / static_cast<std::size_t>(k);
      for (int c = 0; c < h; ++c) combined[token * h + c] += gates[at] * returned[row * h + c];
      ++row;
    }
  }
  return relative_error_over(group, reference, combined);
}

namespace {

// Running-softmax attention of some query rows of one head (FlashAttention's and ring
// attention's accumulation): each block of keys raises the running maximum, rescales the sum
// and the unnormalised output, and adds its own terms; output() divides by the sum.
class RunningAttention {
 public:
  RunningAttention(int rows, int d)
      : d_(d), maximum_(static_cast<std::size_t>(rows), -INFINITY), sum_(maximum_.size(), 0.0f),
        output_(maximum_.size() * static_cast<std::size_t>(d), 0.0f) {}
  // Query rows q (`ld` wide, head columns first) at global positions `q_at` against key and
  // value rows at `k_at`; under a causal mask a query sees only keys at or before it.
  void add(const float* q, const std::vector<int>& q_at, const float* k, const float* v, const std::vector<int>& k_at,
           int ld, bool causal) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(d_));
    std::vector<float> scores(k_at.size());
    for (std::size_t row = 0; row < q_at.size(); ++row) {
      float block_max = -INFINITY;
      for (std::size_t key = 0; key < k_at.size(); ++key) {
        const bool hidden = causal && k_at[key] > q_at[row];
        const float score = hidden ? -INFINITY
                                   : scale * cblas_sdot(d_, q + static_cast<std::ptrdiff_t>(row) * ld, 1,
                                                        k + static_cast<std::ptrdiff_t>(key) * ld, 1);
        scores[key] = score;
        block_max = std::max(block_max, score);
      }
      if (block_max == -INFINITY) continue;  // every key of the block is masked for this row
      const float updated = std::max(maximum_[row], block_max);
      const float rescale = std::exp(maximum_[row] - updated);
      float* out = output_.data() + row * static_cast<std::size_t>(d_);
      sum_[row] *= rescale;
      for (int c = 0; c < d_; ++c) out[c] *= rescale;
      for (std::size_t key = 0; key < k_at.size(); ++key) {
        if (scores[key] == -INFINITY) continue;
        const float weight = std::exp(scores[key] - updated);
        sum_[row] += weight;
        cblas_saxpy(d_, weight, v + static_cast<std::ptrdiff_t>(key) * ld, 1, out, 1);
      }
      maximum_[row] = updated;
    }
  }
  // Row `row`'s output into `to`.
  void output(std::size_t row, float* to) const {
    for (int c = 0; c < d_; ++c) to[c] = output_[row * static_cast<std::size_t>(d_) + c] / sum_[row];
  }

 private:
  int d_;
  std::vector<float> maximum_, sum_, output_;
};

// Every head over the tokens at `positions` (rows of q, k, v, `h` wide), the output in place
// of the rows given (`out`, `h` wide): full softmax over every key, masked by position.
void attention_all_heads(const float* q, const float* k, const float* v, const std::vector<int>& positions, int h,
                         int heads, bool causal, float* out) {
  const int d = h / heads;
  std::vector<float> scores(positions.size());
  for (int head = 0; head < heads; ++head) {
    for (std::size_t row = 0; row < positions.size(); ++row) {
      float largest = -INFINITY;
      for (std::size_t key = 0; key < positions.size(); ++key) {
        scores[key] = causal && positions[key] > positions[row]
                          ? -INFINITY
                          : cblas_sdot(d, q + row * h + head * d, 1, k + key * h + head * d, 1) /
                                std::sqrt(static_cast<float>(d));
        largest = std::max(largest, scores[key]);
      }
      float sum = 0;
      for (float& score : scores) sum += score = std::exp(score - largest);
      float* to = out + row * h + head * d;
      std::fill_n(to, d, 0.0f);
      for (std::size_t key = 0; key < positions.size(); ++key) cblas_saxpy(d, scores[key] / sum, v + key * h + head * d, 1, to, 1);
    }
  }
}

}  // namespace

double context_parallel_attention_error(MPI_Comm group, ContextParallelKind kind, std::int64_t sequence,
                                        std::int64_t hidden, std::int64_t heads, bool causal) {
  const int member = rank_in(group), size = size_of(group);
  const auto s = static_cast<int>(sequence), h = static_cast<int>(hidden), a = static_cast<int>(heads);
  const int d = h / a;
  std::mt19937 random(20261203);
  const std::vector<float> q = random_matrix(random, sequence * hidden), k = random_matrix(random, sequence * hidden),
                           v = random_matrix(random, sequence * hidden);
  std::vector<int> all_positions(static_cast<std::size_t>(s));
  for (int i = 0; i < s; ++i) all_positions[static_cast<std::size_t>(i)] = i;
  std::vector<float> full(q.size());
  attention_all_heads(q.data(), k.data(), v.data(), all_positions, h, a, causal, full.data());

  // The tokens each member holds: Megatron-Core's two chunks for the ring and all-gather,
  // consecutive ones for Ulysses.
  const auto tokens_of = [&](int m) {
    std::vector<int> positions;
    if (kind != ContextParallelKind::kUlysses) {
      const int chunk = s / (2 * size);
      for (const int c : {m, 2 * size - 1 - m}) {
        for (int i = 0; i < chunk; ++i) positions.push_back(c * chunk + i);
      }
    } else {
      for (int i = 0; i < s / size; ++i) positions.push_back(m * (s / size) + i);
    }
    return positions;
  };
  const auto rows_of = [&](const std::vector<float>& matrix, const std::vector<int>& positions) {
    std::vector<float> rows(positions.size() * static_cast<std::size_t>(h));
    for (std::size_t r = 0; r < positions.size(); ++r) {
      std::copy_n(matrix.begin() + static_cast<std::ptrdiff_t>(positions[r]) * h, h,
                  rows.begin() + static_cast<std::ptrdiff_t>(r * static_cast<std::size_t>(h)));
    }
    return rows;
  };
  const std::vector<int> mine = tokens_of(member);
  const std::vector<float> my_q = rows_of(q, mine), reference = rows_of(full, mine);
  std::vector<float> result(reference.size());
  const int count = static_cast<int>(mine.size()) * h;  // floats of one member's Q, K or V

  if (kind != ContextParallelKind::kUlysses) {
    std::vector<RunningAttention> per_head(static_cast<std::size_t>(a), RunningAttention(static_cast<int>(mine.size()), d));
    const auto attend = [&](const float* block_k, const float* block_v,
                            const std::vector<int>& keys) {
      for (int head = 0; head < a; ++head) {
        per_head[static_cast<std::size_t>(head)].add(
            my_q.data() + head * d, mine, block_k + head * d, block_v + head * d, keys, h, causal);
      }
    };
    if (kind == ContextParallelKind::kRing) {
      std::vector<float> kv = rows_of(k, mine), arriving(2 * static_cast<std::size_t>(count));
      const std::vector<float> my_v = rows_of(v, mine);
      kv.insert(kv.end(), my_v.begin(), my_v.end());  // K then V of the block in hand
      for (int step = 0; step < size; ++step) {
        const int owner = (member - step + size) % size;  // whose block is in hand
        attend(kv.data(), kv.data() + count, tokens_of(owner));
        if (step + 1 == size) break;
        MPI_Sendrecv(kv.data(), 2 * count, MPI_FLOAT, (member + 1) % size, 0, arriving.data(),
                     2 * count, MPI_FLOAT, (member - 1 + size) % size, 0, group, MPI_STATUS_IGNORE);
        kv.swap(arriving);
      }
    } else {  // all-gather: every member's K and V rows, member after member, at their positions
      std::vector<float> all_k(static_cast<std::size_t>(count) * static_cast<std::size_t>(size)),
          all_v(all_k.size());
      MPI_Allgather(rows_of(k, mine).data(), count, MPI_FLOAT, all_k.data(), count, MPI_FLOAT,
                    group);
      MPI_Allgather(rows_of(v, mine).data(), count, MPI_FLOAT, all_v.data(), count, MPI_FLOAT,
                    group);
      std::vector<int> keys;
      for (int m = 0; m < size; ++m) {
        const std::vector<int> positions = tokens_of(m);
        keys.insert(keys.end(), positions.begin(), positions.end());
      }
      attend(all_k.data(), all_v.data(), keys);
    }
    for (std::size_t row = 0; row < mine.size(); ++row) {
      for (int head = 0; head < a; ++head) per_head[static_cast<std::size_t>(head)].output(row, result.data() + row * h + head * d);
    }
  } else {
    // All-to-all: member j gets this member's rows of heads [j·a/cp, (j+1)·a/cp) of Q, K and V.
    const int local = static_cast<int>(mine.size()), width = h / size;  // tokens here; columns of one member's heads
    const auto to_heads = [&](const std::vector<float>& rows) {
      std::vector<float> packed(rows.size()), gathered(static_cast<std::size_t>(s) * width);
      for (int j = 0; j < size; ++j) {
        for (int r = 0; r < local; ++r) {
          std::copy_n(rows.begin() + static_cast<std::ptrdiff_t>(r) * h + j * width, width,
                      packed.begin() + (static_cast<std::ptrdiff_t>(j) * local + r) * width);
        }
      }
      MPI_Alltoall(packed.data(), local * width, MPI_FLOAT, gathered.data(), local * width, MPI_FLOAT, group);
      return gathered;  // all s tokens (member after member: in sequence order) of this member's heads
    };
    const std::vector<float> q_heads = to_heads(my_q), k_heads = to_heads(rows_of(k, mine)),
                             v_heads = to_heads(rows_of(v, mine));
    std::vector<float> out_heads(q_heads.size());
    attention_all_heads(q_heads.data(), k_heads.data(), v_heads.data(), all_positions, width, a / size, causal,
                        out_heads.data());
    std::vector<float> back(out_heads.size());
    MPI_Alltoall(out_heads.data(), local * width, MPI_FLOAT, back.data(), local * width, MPI_FLOAT, group);
    for (int j = 0; j < size; ++j) {  // member j's heads of this member's tokens
      for (int r = 0; r < local; ++r) {
        std::copy_n(back.begin() + (static_cast<std::ptrdiff_t>(j) * local + r) * width, width,
                    result.begin() + static_cast<std::ptrdiff_t>(r) * h + j * width);
      }
    }
  }
  return relative_error_over(group, reference, result);
}

}  // namespace backend::verification
