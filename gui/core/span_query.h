// Finding spans: the search-and-filter query of the viewer and the spans related to a
// selected one.
//
// Query syntax (words separated by spaces, all must hold):
//   cat:NAME      the span's category (all_reduce, forward, …; several cat: words = any of them)
//   rank:N        rank N; rank:A-B a range (several rank: words = any of them)
//   anything else a case-insensitive substring of the op name
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/trace/timeline.h"

namespace gui {

class InvalidQuery : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class SpanQuery {
 public:
  SpanQuery() = default;
  // Throws InvalidQuery naming the word it could not read.
  static SpanQuery parse(std::string_view text);

  bool empty() const { return words_.empty() && !any_category_ && ranks_.empty(); }
  bool matches(const trace::Timeline& timeline, const trace::Span& span) const;
  // Whether every span of this category would match, whatever its name and rank.
  bool matches_whole_category(trace::Category category) const;
  // Indices of the matching spans, at most `limit` of them, in timeline order.
  std::vector<std::uint32_t> find(const trace::Timeline& timeline, std::size_t limit) const;

 private:
  std::vector<std::string> words_;  // lower case
  bool any_category_ = false;
  std::array<bool, trace::kCategoryCount> categories_{};
  std::vector<std::pair<std::int32_t, std::int32_t>> ranks_;  // inclusive ranges
};

// The spans tied to one span: those it waited for and those that waited for it on its rank
// (from Timeline::dependencies), and its peers — the same collective or transfer on the
// other ranks (same name, category and group, overlapping it in time).
struct RelatedSpans {
  std::vector<std::uint32_t> predecessors;
  std::vector<std::uint32_t> successors;
  std::vector<std::uint32_t> peers;
};
RelatedSpans related_spans(const trace::Timeline& timeline, std::uint32_t span);

}  // namespace gui
