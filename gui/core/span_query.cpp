// Query parsing and matching, related spans (see span_query.h).
#include "gui/core/span_query.h"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>

namespace gui {
namespace {

std::string lower(std::string_view text) {
  std::string result(text);
  std::transform(result.begin(), result.end(), result.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return result;
}

bool contains_ignoring_case(std::string_view haystack, const std::string& lowered_needle) {
  const auto found = std::search(haystack.begin(), haystack.end(), lowered_needle.begin(), lowered_needle.end(),
                                 [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
  return found != haystack.end();
}

std::int32_t parse_rank(std::string_view text, std::string_view word) {
  std::int32_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) {
    throw InvalidQuery(fmt::format("'{}': expected rank:N or rank:A-B with ranks ≥ 0", word));
  }
  return value;
}

}  // namespace

SpanQuery SpanQuery::parse(std::string_view text) {
  SpanQuery query;
  std::size_t position = 0;
  while (position < text.size()) {
    const std::size_t begin = text.find_first_not_of(' ', position);
    if (begin == std::string_view::npos) break;
    const std::size_t end = std::min(text.find(' ', begin), text.size());
    const std::string_view word = text.substr(begin, end - begin);
    position = end;
    if (word.starts_with("cat:")) {
      const auto category = trace::category_from_name(word.substr(4));
      if (!category) {
        std::string known;
        for (std::size_t c = 0; c < trace::kCategoryCount; ++c) {
          known += (c ? ", " : "") + std::string(trace::category_name(static_cast<trace::Category>(c)));
        }
        throw InvalidQuery(fmt::format("'{}': unknown category; expected one of {}", word, known));
      }
      query.any_category_ = true;
      query.categories_[static_cast<std::size_t>(*category)] = true;
    } else if (word.starts_with("rank:")) {
      const std::string_view range = word.substr(5);
      const std::size_t dash = range.find('-');
      const std::int32_t first = parse_rank(range.substr(0, dash), word);
      const std::int32_t last = dash == std::string_view::npos ? first : parse_rank(range.substr(dash + 1), word);
      if (last < first) throw InvalidQuery(fmt::format("'{}': the range ends before it starts", word));
      query.ranks_.emplace_back(first, last);
    } else {
      query.words_.push_back(lower(word));
    }
  }
  return query;
}

bool SpanQuery::matches(const trace::Timeline& timeline, const trace::Span& span) const {
  if (any_category_ && !categories_[static_cast<std::size_t>(span.category)]) return false;
  if (!ranks_.empty() && std::none_of(ranks_.begin(), ranks_.end(), [&](const auto& range) {
        return span.rank >= range.first && span.rank <= range.second;
      })) {
    return false;
  }
  const std::string& name = timeline.strings.at(span.name);
  return std::all_of(words_.begin(), words_.end(), [&](const std::string& word) { return contains_ignoring_case(name, word); });
}

bool SpanQuery::matches_whole_category(trace::Category category) const {
  return words_.empty() && ranks_.empty() && (!any_category_ || categories_[static_cast<std::size_t>(category)]);
}

std::vector<std::uint32_t> SpanQuery::find(const trace::Timeline& timeline, std::size_t limit) const {
  std::vector<std::uint32_t> found;
  for (std::size_t i = 0; i < timeline.spans.size() && found.size() < limit; ++i) {
    if (matches(timeline, timeline.spans[i])) found.push_back(static_cast<std::uint32_t>(i));
  }
  return found;
}

RelatedSpans related_spans(const trace::Timeline& timeline, std::uint32_t selected) {
  RelatedSpans related;
  const trace::Span& span = timeline.spans.at(selected);
  std::vector<std::int64_t> before, after;
  if (span.op >= 0) {
    for (const trace::OpDependency& dependency : timeline.dependencies) {
      if (dependency.rank != span.rank) continue;
      if (dependency.op == span.op) before.push_back(dependency.after_op);
      if (dependency.after_op == span.op) after.push_back(dependency.op);
    }
  }
  const bool communicates = trace::is_communication(span.category);
  for (std::size_t i = 0; i < timeline.spans.size(); ++i) {
    const trace::Span& other = timeline.spans[i];
    const auto index = static_cast<std::uint32_t>(i);
    if (other.rank == span.rank) {
      if (other.op < 0 || index == selected) continue;
      if (std::find(before.begin(), before.end(), other.op) != before.end()) related.predecessors.push_back(index);
      if (std::find(after.begin(), after.end(), other.op) != after.end()) related.successors.push_back(index);
    } else if (communicates && other.name == span.name && other.category == span.category && other.group == span.group &&
               other.start_ps < span.end_ps && other.end_ps > span.start_ps) {
      related.peers.push_back(index);
    }
  }
  return related;
}

}  // namespace gui
