// Reading scenarios from TOML (toml++). Every mistake is reported as one ScenarioError that
// names file:line:column, the dotted key, what is expected and, where possible, a fix (a
// "did you mean" for misspelt keys and values). Values can be overridden with `key=value`
// strings, as `dtsim run --set` does; an override of an unknown key is an error too.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "scenarios/scenario.h"

namespace scenarios {

struct ValidationCase;

// A parsed TOML document plus overrides, from which scenarios (and sweep points) are read.
class ScenarioDocument {
 public:
  // `hardware_profile`, when given (a path from the current directory), is taken in instead of
  // the profile the scenario names.
  static ScenarioDocument from_file(const std::string& path, const std::string& hardware_profile = {});
  static ScenarioDocument from_string(const std::string& text, const std::string& source_name);
  ScenarioDocument(ScenarioDocument&&) noexcept;
  ScenarioDocument& operator=(ScenarioDocument&&) noexcept;
  ~ScenarioDocument();

  // Applies "dotted.key=value"; the value is TOML (5, 2.5, true, "text", [1, 2]) or, if it
  // does not parse as TOML, a bare string. `origin` names where it came from in messages.
  void set(const std::string& assignment, const std::string& origin);
  // Adds (or replaces) the [sweep] axis "dotted.key=v1,v2,…"; each value is TOML or, if it does
  // not parse as TOML, a bare string.
  void add_sweep_axis(const std::string& assignment, const std::string& origin);
  // A copy with `assignments` applied (`origin` names them in messages); the [sweep] table
  // is dropped.
  ScenarioDocument variant(const std::vector<std::string>& assignments, const std::string& origin) const;

  // Reads and validates the scenario. Throws ScenarioError.
  Scenario read() const;
  // For a caller that chooses the parallel layout itself (search, advise): the scenario as
  // read() gives it when its layout holds; when only the layout breaks a rule (the degrees,
  // their divisibility and combination, the batch's split), the rest read and validated with
  // plain data parallelism over every GPU in its place (gradient accumulation not derived), and
  // the layout's error in `layout_fault`. Throws ScenarioError for any other fault.
  Scenario read_for_layout_choice(std::string* layout_fault) const;
  // One document per point of the [sweep] table's cartesian product, in row-major order
  // (the last axis varies fastest), each with its point's values applied.
  std::vector<ScenarioDocument> sweep_points() const;
  // The sweep axes (empty when the document has no [sweep] table).
  std::vector<SweepAxis> sweep_axes() const;

  // Where it came from (what read() copies into the Scenario): the file, the key=value applied
  // over it in order, the hardware profile taken in (empty: none).
  const std::string& file() const;
  const std::vector<std::string>& overrides() const;
  const std::string& hardware_profile() const;

 private:
  friend std::vector<ValidationCase> read_validation_manifest(const std::string& path);
  struct State;
  explicit ScenarioDocument(std::unique_ptr<State> state);
  Scenario read(bool check_layout) const;
  std::unique_ptr<State> state_;
};

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides = {});

// "0-7,896", "first-node,critical", "all", "none", … (TraceSelection); none, with the reason in
// `why`, when the text is not such a list.
std::optional<TraceSelection> parse_trace_selection(const std::string& text, std::string* why = nullptr);

// The text of a regular file of at most 64 MiB whose name is valid UTF-8; otherwise why not
// ("not a regular file", "no such file", "larger than 64 MiB", "cannot be read", a name that is
// not UTF-8). Every input file dtsim reads goes through it.
std::variant<std::string, std::string_view> read_input_file(const std::filesystem::path& path);

// Levenshtein distance, for "did you mean" suggestions.
std::size_t edit_distance(const std::string& a, const std::string& b);
// The candidate the word most likely meant, or empty: one equal but for case, else the shortest
// holding the word (of 3 or more characters), else the nearest within a few edits.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace scenarios
