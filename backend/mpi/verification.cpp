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

}  // namespace backend::verification
