// Internal to the config module: typed, strict access to yaml-cpp nodes.
// Every conversion either returns a value or throws ConfigError at the node's
// file:line:col, so the section parsers (parse.cpp, target.cpp) read like the
// schema of DESIGN §4 instead of a pile of position bookkeeping. attempt()
// runs one step and records its error, so parsing goes on to report every
// problem of the file; warnings and skipped checks are recorded alongside.
#pragma once
#include <yaml-cpp/yaml.h>

#include <utility>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"

namespace lse::config::detail {

// A value in the document plus the place to blame for it. An empty value
// (`key:` with nothing after it) has a mark on the *next* line in yaml-cpp,
// so for those the key's mark is kept instead.
struct Item {
  YAML::Node node;
  YAML::Mark mark;
  std::string name;  // key path used as message prefix, e.g. "timeout.total"
};

// Everything parsing found, gathered while it goes on past each error.
struct Collected {
  std::vector<Diagnostic> errors;
  Findings findings;
};

class Reader {
 public:
  Reader(std::string file, std::string base_dir, Collected& out, LoadOptions options = {});

  const std::string& file() const { return file_; }
  const LoadOptions& options() const { return options_; }
  // Relative paths resolve against the config file's folder, not the cwd, so
  // a config behaves the same wherever the exporter is started from.
  std::string resolve(const std::string& path) const;

  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& message) const;
  // Prefixes the message with the item's name ("interval: ...").
  [[noreturn]] void fail(const Item& item, const std::string& message) const;

  // Runs one step of parsing. A ConfigError it throws is recorded and parsing
  // goes on with the next step; true when the step succeeded.
  bool attempt(const std::function<void()>& step) const;
  // Stops the current step without a new error: what is wrong was reported
  // already (an unknown key that left a mapping incomplete).
  [[noreturn]] static void abandon();
  void record(const YAML::Mark& mark, const std::string& message) const;
  std::size_t error_count() const { return out_.errors.size(); }
  // A valid value that likely does not do what was meant (printed, logged).
  void warn(const YAML::Mark& mark, const std::string& message) const;
  void warn(const Item& item, const std::string& message) const;
  // A check the options skipped (--no-env-check), named for the report.
  void not_checked(const Item& item, const std::string& what) const;

  std::string string(const Item& item) const;           // any scalar
  std::string nonempty_string(const Item& item) const;  // scalar, not ""
  bool boolean(const Item& item) const;                 // true/false only
  std::int64_t integer(const Item& item) const;         // decimal integer
  double number(const Item& item) const;                // finite int or float
  Duration duration(const Item& item) const;            // "250ms", "1m30s"
  std::uint64_t byte_size(const Item& item) const;      // 1048576, "64MiB", "10MB"
  std::vector<Item> list(const Item& item) const;       // items named "name[i]"
  void require_mapping(const Item& item) const;

  // The caps of `limits:`, read before any file is: set once that section is parsed.
  void set_limits(const Limits& limits) { limits_ = limits; }
  const Limits& limits() const { return limits_; }

  // Reads a whole file named by the item, bounded by its kind's cap
  // (util/bounded_file.hpp): {resolved path, content}. A prompt file's
  // errors name its path; a secret file's do not (a value pasted into
  // bearer_token_file by mistake may be the token itself).
  enum class FileKind { prompt, secret };
  std::pair<std::string, std::string> read_file(const Item& item, FileKind kind) const;

 private:
  Diagnostic at(const YAML::Mark& mark, const std::string& message) const;
  static std::string named(const Item& item, const std::string& message);

  std::string file_;
  std::string base_dir_;
  Collected& out_;
  LoadOptions options_;
  Limits limits_;
};

// A mapping whose keys were checked against the allowed set: an unknown key
// is an error at the key, listing what is allowed, and is skipped so the
// known keys are still read. Children are named `child_prefix + key` in
// messages.
class Fields {
 public:
  Fields(const Reader& reader, const Item& map, std::string_view where,
         const std::vector<std::string_view>& allowed, const std::string& child_prefix);

  std::optional<Item> get(std::string_view key) const;
  // Missing keys have no mark in yaml-cpp: blame the mapping itself.
  Item require(std::string_view key) const;
  bool has(std::string_view key) const { return get(key).has_value(); }
  // An unknown key of this mapping was reported as a typo of `key` ("did you
  // mean"): that key's absence is the same mistake, not a second one.
  bool misspelt(std::string_view key) const;
  // Any unknown key at all: what looks missing may be one of them.
  bool had_unknown_keys() const { return had_unknown_; }

  struct Entry {
    std::string key;
    YAML::Mark key_mark;
    Item value;
  };
  const std::vector<Entry>& entries() const { return entries_; }
  const Item& self() const { return self_; }

 private:
  const Reader& reader_;
  Item self_;
  std::string where_;
  std::vector<Entry> entries_;
  std::vector<std::string_view> suggested_;
  bool had_unknown_ = false;
};

// Parses the text as exactly one YAML document whose root is a mapping.
// Syntax errors carry yaml-cpp's mark. Works around yaml-cpp 0.7's LoadAll,
// which loops forever (allocating) on input such as ",a: 1" (jbeder/yaml-cpp
// #1040, fixed upstream by PR #1319).
YAML::Node load_single_document(const Reader& reader, const std::string& yaml_text);

// Whole-document checks yaml-cpp does not do: duplicate keys (it keeps both;
// recorded, parsing goes on), non-string keys, and alias cycles / alias
// blow-ups (it builds them happily; these stop parsing).
void check_structure(const Reader& reader, const YAML::Node& root);

// "got 'abc'", "got a mapping", "got an empty value" for type errors.
std::string describe(const YAML::Node& node);

// Trailing newlines are an artefact of files and block scalars, not content.
std::string trim_trailing_newlines(std::string s);
bool is_blank(std::string_view s);

}  // namespace lse::config::detail
