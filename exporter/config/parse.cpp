// Entry points config::parse / config::load_file and the top-level sections
// that are not about targets: listen, prompts, buckets, rows, diagnosis.
// Sections are read in dependency order (prompts before the targets that
// name them), not document order.
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "config/reader.hpp"
#include "config/rules.hpp"
#include "config/sections.hpp"

namespace lse::config {
namespace {

using detail::Fields;
using detail::Item;
using detail::Reader;

// The shipped prompt set (config/prompts/), used when `prompts:` is absent.
constexpr std::string_view kDefaultPrompts[] = {"short", "medium", "long"};

std::string prompt_text(const Reader& r, const Item& item, std::string text) {
  text = detail::trim_trailing_newlines(std::move(text));
  if (detail::is_blank(text)) r.fail(item, "prompt text is empty");
  return text;
}

std::map<std::string, Prompt> parse_prompts(const Reader& r, const std::optional<Item>& section,
                                            const YAML::Node& root) {
  std::map<std::string, Prompt> prompts;
  if (!section) {
    for (auto name : kDefaultPrompts) {
      std::string rel = fmt::format("prompts/{}.txt", name);
      std::string path = r.resolve(rel);
      std::ifstream in(path, std::ios::binary);
      if (!in) {
        r.fail(root.Mark(), fmt::format("no prompts: section, and the default prompt file '{}' "
                                        "cannot be read: {}",
                                        path, std::strerror(errno)));
      }
      std::ostringstream text;
      text << in.rdbuf();
      Item where{root, root.Mark(), ""};
      prompts.emplace(name, Prompt{std::string(name), prompt_text(r, where, text.str()), path});
    }
    return prompts;
  }
  r.require_mapping(*section);
  for (const auto& kv : section->node) {
    std::string name = kv.first.Scalar();
    if (auto err = detail::check_name("prompt", name)) r.fail(kv.first.Mark(), *err);
    Item value{kv.second, kv.second.IsNull() ? kv.first.Mark() : kv.second.Mark(),
               "prompts." + name};
    Fields f(r, value, value.name, {"text", "file"}, value.name + ".");
    auto text = f.get("text");
    auto file = f.get("file");
    if (text && file) r.fail(*file, "a prompt has either text or file, not both");
    if (!text && !file) r.fail(value, "a prompt needs text or file");
    Prompt p{name, {}, "inline"};
    if (text) {
      p.text = prompt_text(r, *text, r.string(*text));
    } else {
      auto [path, content] = r.read_file(*file);
      p.text = prompt_text(r, *file, std::move(content));
      p.source = path;
    }
    prompts.emplace(name, std::move(p));
  }
  if (prompts.empty())
    r.fail(*section, "must define at least one prompt (or omit the key for the default set)");
  return prompts;
}

std::vector<double> bucket_bounds(const Reader& r, const Item& item) {
  std::vector<double> bounds;
  for (const Item& element : r.list(item)) {
    double b = r.number(element);
    if (b <= 0) r.fail(element, fmt::format("bucket bounds must be > 0, got {}", b));
    if (!bounds.empty() && b <= bounds.back()) {
      r.fail(element, fmt::format("bucket bounds must be strictly increasing, got {} after {}", b,
                                  bounds.back()));
    }
    bounds.push_back(b);
  }
  if (bounds.empty()) r.fail(item, "must list at least one bucket bound");
  return bounds;
}

Buckets parse_buckets(const Reader& r, const Item& item) {
  Buckets b;
  Fields f(r, item, "buckets", {"gap", "ttft", "duration", "tail", "phase", "tokens_per_second"},
           "buckets.");
  for (const auto& e : f.entries()) {
    auto bounds = bucket_bounds(r, e.value);
    if (e.key == "gap") b.gap = bounds;
    if (e.key == "ttft") b.ttft = bounds;
    if (e.key == "duration") b.duration = bounds;
    if (e.key == "tail") b.tail = bounds;
    if (e.key == "phase") b.phase = bounds;
    if (e.key == "tokens_per_second") b.tokens_per_second = bounds;
  }
  return b;
}

Rows parse_rows(const Reader& r, const Item& item) {
  Rows rows;
  Fields f(r, item, "rows", {"path", "max_size", "keep", "ring"}, "rows.");
  for (const auto& e : f.entries()) {
    const Item& v = e.value;
    if (e.key == "path") {
      rows.path = r.resolve(r.nonempty_string(v));
    } else if (e.key == "max_size") {
      rows.max_size = r.byte_size(v);
      if (rows.max_size == 0) r.fail(v, "must be > 0");
    } else if (e.key == "keep") {
      std::int64_t keep = r.integer(v);
      if (keep < 0 || keep > 1000)
        r.fail(v, fmt::format("must be between 0 and 1000, got {}", keep));
      rows.keep = static_cast<int>(keep);
    } else if (e.key == "ring") {
      // At least one row, so /api/v1/probes always has the latest probe.
      std::int64_t ring = r.integer(v);
      if (ring < 1 || ring > 1000000)
        r.fail(v, fmt::format("must be between 1 and 1000000, got {}", ring));
      rows.ring = static_cast<std::size_t>(ring);
    }
  }
  return rows;
}

DiagnosisThresholds parse_diagnosis(const Reader& r, const Item& item) {
  DiagnosisThresholds d;
  Fields f(
      r, item, "diagnosis",
      {"queue_ttft_seconds", "queue_gap_p95_seconds", "transport_gap_ratio",
       "transport_min_stall_ratio", "long_answer_duration_seconds", "spread_ratio", "min_probes"},
      "diagnosis.");
  auto seconds = [&](const Item& v) {
    Duration t = r.duration(v);
    if (t <= Duration::zero()) r.fail(v, fmt::format("must be > 0, got {}", format_duration(t)));
    return std::chrono::duration<double>(t).count();
  };
  // p95/p50 is never below 1, so a ratio threshold under 1 would always hold.
  auto ratio = [&](const Item& v) {
    double x = r.number(v);
    if (x < 1) r.fail(v, fmt::format("must be >= 1, got {}", x));
    return x;
  };
  for (const auto& e : f.entries()) {
    const Item& v = e.value;
    if (e.key == "queue_ttft_seconds") d.queue_ttft_seconds = seconds(v);
    if (e.key == "queue_gap_p95_seconds") d.queue_gap_p95_seconds = seconds(v);
    if (e.key == "long_answer_duration_seconds") d.long_answer_duration_seconds = seconds(v);
    if (e.key == "transport_gap_ratio") d.transport_gap_ratio = ratio(v);
    if (e.key == "spread_ratio") d.spread_ratio = ratio(v);
    if (e.key == "transport_min_stall_ratio") {
      double x = r.number(v);
      if (x < 0 || x > 1) r.fail(v, fmt::format("must be between 0 and 1, got {}", x));
      d.transport_min_stall_ratio = x;
    }
    if (e.key == "min_probes") {
      std::int64_t n = r.integer(v);
      if (n < 1 || n > std::numeric_limits<int>::max())
        r.fail(v, fmt::format("must be >= 1, got {}", n));
      d.min_probes = static_cast<int>(n);
    }
  }
  return d;
}

}  // namespace

Config parse(const std::string& yaml_text, const std::string& file_name,
             const std::string& base_dir) {
  Reader r(file_name, base_dir);
  YAML::Node root = detail::load_single_document(r, yaml_text);
  detail::check_structure(r, root);
  Fields top(r, Item{root, root.Mark(), ""}, "",
             {"listen", "defaults", "prompts", "targets", "buckets", "rows", "diagnosis"}, "");

  Config config;
  config.source_file = file_name;
  if (auto listen = top.get("listen")) {
    config.listen = r.string(*listen);
    if (auto err = detail::check_listen(config.listen)) r.fail(listen->mark, *err);
  }
  if (auto buckets = top.get("buckets")) config.buckets = parse_buckets(r, *buckets);
  if (auto rows = top.get("rows")) config.rows = parse_rows(r, *rows);
  if (auto diagnosis = top.get("diagnosis")) config.diagnosis = parse_diagnosis(r, *diagnosis);
  config.prompts = parse_prompts(r, top.get("prompts"), root);
  Target defaults = detail::parse_defaults(r, top.get("defaults"));
  config.targets = detail::parse_targets(r, top.require("targets"), defaults, config.prompts);
  return config;
}

Config load_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw ConfigError(path, 0, 0, "cannot read config file: is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw ConfigError(path, 0, 0, fmt::format("cannot read config file: {}", std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  std::string base_dir = std::filesystem::path(path).parent_path().string();
  return parse(text.str(), path, base_dir);
}

}  // namespace lse::config
