// Entry points config::parse / config::load_file and the top-level sections
// that are not about targets: listen, min_interval, prompts, rows, diagnosis, limits, web
// (metrics and buckets: metrics_section.cpp). Sections are read in dependency order (prompts before
// the targets that name them), not document order; each key is one Reader::attempt, and the errors
// of all of them are sorted into file order at the end.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>

#include "config/built_in_prompts.hpp"
#include "config/listen_check.hpp"
#include "config/reader.hpp"
#include "config/rows_check.hpp"
#include "config/rules.hpp"
#include "config/sections.hpp"
#include "net/listen_address.hpp"
#include "util/bounded_file.hpp"

namespace lse::config {
namespace {

using detail::Fields;
using detail::Item;
using detail::Reader;

// A config file is YAML a person wrote; anything this large is a mistake.
constexpr std::uint64_t kMaxConfigFileBytes = 16ull << 20;

std::string prompt_text(const Reader& r, const Item& item, std::string text) {
  text = detail::trim_trailing_newlines(std::move(text));
  if (detail::is_blank(text)) r.fail(item, "prompt text is empty");
  return text;
}

Prompt parse_prompt(const Reader& r, const std::string& name, const YAML::Node& key,
                    const YAML::Node& node) {
  if (auto err = detail::check_name("prompt", name)) r.fail(key.Mark(), *err);
  Item value{node, node.IsNull() ? key.Mark() : node.Mark(), "prompts." + name};
  Fields f(r, value, value.name, {"text", "file"}, value.name + ".");
  auto text = f.get("text");
  auto file = f.get("file");
  if (text && file) r.fail(*file, "a prompt has either text or file, not both");
  if (!text && !file && f.had_unknown_keys()) Reader::abandon();  // `texts:` said it
  if (!text && !file) r.fail(value, "a prompt needs text or file");
  Prompt p{name, {}, "inline"};
  if (text) {
    p.text = prompt_text(r, *text, r.string(*text));
  } else {
    auto [path, content] = r.read_file(*file, Reader::FileKind::prompt);
    p.text = prompt_text(r, *file, std::move(content));
    p.source = path;
  }
  return p;
}

// One prompt of the default set (used when `prompts:` is absent): the file
// <config dir>/prompts/<name>.txt when it exists, read bounded (any other
// problem of it is an error naming it: a file someone put there is not
// silently ignored), else the text compiled into the binary.
Prompt default_prompt(const Reader& r, const BuiltInPrompt& built_in, const YAML::Node& root) {
  const std::string name(built_in.name);
  const std::string path = r.resolve(fmt::format("prompts/{}.txt", name));
  const Item where{root, root.Mark(), ""};
  util::FileRead file = util::read_bounded_file(path, r.limits().prompt_file_bytes, "prompt files");
  if (file.problem == util::FileProblem::missing)
    return Prompt{name, prompt_text(r, where, std::string(built_in.text)),
                  std::string(kBuiltInPromptSource)};
  if (!file.ok()) {
    const char* raise =
        file.problem == util::FileProblem::too_large ? " (raise limits.prompt_file_bytes)" : "";
    r.fail(root.Mark(),
           fmt::format("no prompts: section: cannot read '{}' (it overrides the built-in {} "
                       "prompt): {}{}",
                       path, name, file.error, raise));
  }
  if (detail::is_blank(file.content)) {
    r.fail(root.Mark(), fmt::format("no prompts: section: '{}' (it overrides the built-in {} "
                                    "prompt) is empty",
                                    path, name));
  }
  return Prompt{name, prompt_text(r, where, std::move(file.content)), path};
}

std::map<std::string, Prompt> parse_prompts(const Reader& r, const std::optional<Item>& section,
                                            const YAML::Node& root) {
  std::map<std::string, Prompt> prompts;
  if (!section) {
    for (const auto& built_in : built_in_prompts())
      prompts.emplace(std::string(built_in.name), default_prompt(r, built_in, root));
    return prompts;
  }
  r.require_mapping(*section);
  for (const auto& kv : section->node) {
    const std::string name = kv.first.Scalar();
    // A prompt that fails still defines its name: targets naming it are fine.
    if (!r.attempt([&] { prompts.emplace(name, parse_prompt(r, name, kv.first, kv.second)); }))
      prompts.emplace(name, Prompt{name, {}, "invalid"});
  }
  if (prompts.empty())
    r.fail(*section, "must define at least one prompt (or omit the key for the default set)");
  return prompts;
}

void apply_rows_key(const Reader& r, Rows& rows, const std::string& key, const Item& v) {
  if (key == "path") {
    rows.path = r.resolve(r.nonempty_string(v));
    // Without the secrets (--no-env-check) the config is checked away from
    // where it runs: the rows path is as much the other machine's as they are.
    if (r.options().check_rows_path && !r.options().read_secrets)
      r.not_checked(v, fmt::format("rows file '{}'", rows.path));
    else if (r.options().check_rows_path)
      if (auto problem = detail::rows_path_problem(rows.path))
        r.fail(v, rows.path + " " + *problem);
  } else if (key == "max_size") {
    rows.max_size = r.byte_size(v);
    if (rows.max_size == 0) r.fail(v, "must be > 0");
  } else if (key == "keep") {
    std::int64_t keep = r.integer(v);
    if (keep < 0 || keep > 1000) r.fail(v, fmt::format("must be between 0 and 1000, got {}", keep));
    rows.keep = static_cast<int>(keep);
  } else if (key == "ring") {
    // At least one row, so /api/v1/probes always has the latest probe.
    std::int64_t ring = r.integer(v);
    if (ring < 1 || ring > 1000000)
      r.fail(v, fmt::format("must be between 1 and 1000000, got {}", ring));
    rows.ring = static_cast<std::size_t>(ring);
  } else if (key == "memory") {
    rows.memory = r.byte_size(v);
    if (rows.memory < Rows::kMinMemory || rows.memory > Rows::kMaxMemory)
      r.fail(v, fmt::format("must be between 1MiB and 64GiB, got {} bytes", rows.memory));
  }
}

Rows parse_rows(const Reader& r, const Item& item) {
  Rows rows;
  Fields f(r, item, "rows", {"path", "max_size", "keep", "ring", "memory"}, "rows.");
  for (const auto& e : f.entries()) r.attempt([&] { apply_rows_key(r, rows, e.key, e.value); });
  return rows;
}

void apply_diagnosis_key(const Reader& r, DiagnosisThresholds& d, const std::string& key,
                         const Item& v) {
  auto seconds = [&] {
    Duration t = r.duration(v);
    if (t <= Duration::zero()) r.fail(v, fmt::format("must be > 0, got {}", format_duration(t)));
    return std::chrono::duration<double>(t).count();
  };
  // p95/p50 is never below 1, so a ratio threshold under 1 would always hold.
  auto ratio = [&] {
    double x = r.number(v);
    if (x < 1) r.fail(v, fmt::format("must be >= 1, got {}", x));
    return x;
  };
  if (key == "queue_ttft_seconds") d.queue_ttft_seconds = seconds();
  if (key == "queue_gap_p95_seconds") d.queue_gap_p95_seconds = seconds();
  if (key == "long_answer_duration_seconds") d.long_answer_duration_seconds = seconds();
  if (key == "transport_gap_ratio") d.transport_gap_ratio = ratio();
  if (key == "spread_ratio") d.spread_ratio = ratio();
  if (key == "transport_min_stall_ratio") {
    double x = r.number(v);
    if (x < 0 || x > 1) r.fail(v, fmt::format("must be between 0 and 1, got {}", x));
    d.transport_min_stall_ratio = x;
  }
  if (key == "release_share") {
    double x = r.number(v);
    if (x <= 0 || x > 1) r.fail(v, fmt::format("must be > 0 and <= 1, got {}", x));
    d.release_share = x;
  }
  if (key == "tokens_per_chunk_ratio") {
    double x = r.number(v);
    // 1 would note every stream: one token per chunk is the plain case.
    if (x <= 1) r.fail(v, fmt::format("must be > 1, got {}", x));
    d.tokens_per_chunk_ratio = x;
  }
  if (key == "burst_chunks") {
    std::int64_t n = r.integer(v);
    if (n < 1 || n > 1000) r.fail(v, fmt::format("must be between 1 and 1000, got {}", n));
    d.burst_chunks = static_cast<int>(n);
  }
  if (key == "min_probes") {
    std::int64_t n = r.integer(v);
    if (n < 1 || n > std::numeric_limits<int>::max())
      r.fail(v, fmt::format("must be >= 1, got {}", n));
    d.min_probes = static_cast<int>(n);
  }
}

// `limits:`: the caps on the files the config names. Read before them.
Limits parse_limits(const Reader& r, const Item& item) {
  Limits limits;
  Fields f(r, item, "limits", {"prompt_file_bytes", "secret_file_bytes"}, "limits.");
  for (const auto& e : f.entries()) {
    r.attempt([&] {
      const std::uint64_t n = r.byte_size(e.value);
      if (n == 0) r.fail(e.value, "must be > 0");
      if (n > Limits::kMaxBytes)
        r.fail(e.value,
               fmt::format("must be at most {}, got {}", util::format_byte_limit(Limits::kMaxBytes),
                           util::format_byte_limit(n)));
      if (e.key == "prompt_file_bytes") limits.prompt_file_bytes = n;
      if (e.key == "secret_file_bytes") limits.secret_file_bytes = n;
    });
  }
  return limits;
}

DiagnosisThresholds parse_diagnosis(const Reader& r, const Item& item) {
  DiagnosisThresholds d;
  Fields f(r, item, "diagnosis",
           {"queue_ttft_seconds", "queue_gap_p95_seconds", "transport_gap_ratio",
            "transport_min_stall_ratio", "long_answer_duration_seconds", "spread_ratio",
            "min_probes", "burst_chunks", "release_share", "tokens_per_chunk_ratio"},
           "diagnosis.");
  for (const auto& e : f.entries()) r.attempt([&] { apply_diagnosis_key(r, d, e.key, e.value); });
  return d;
}

void apply_web_key(const Reader& r, Web& web, const std::string& key, const Item& v) {
  if (key == "max_connections" || key == "max_connections_per_address") {
    const std::int64_t n = r.integer(v);
    if (n < 1 || static_cast<std::uint64_t>(n) > Web::kMaxConnections)
      r.fail(v, fmt::format("must be between 1 and {}, got {}", Web::kMaxConnections, n));
    (key == "max_connections" ? web.max_connections : web.max_connections_per_address) =
        static_cast<std::uint64_t>(n);
    return;
  }
  const Duration d = r.duration(v);
  if (d < std::chrono::milliseconds(1) || d > std::chrono::hours(24))
    r.fail(v, fmt::format("must be between 1ms and 24h, got {}", format_duration(d)));
  if (key == "header_timeout") web.header_timeout = d;
  if (key == "idle_timeout") web.idle_timeout = d;
  if (key == "write_timeout") web.write_timeout = d;
}

// `web:`: the HTTP server's connection caps and deadlines. The per-address
// cap follows a lower total cap when it is not set itself, so the effective
// (and dumped) values always read back.
Web parse_web(const Reader& r, const Item& item) {
  Web web;
  Fields f(r, item, "web",
           {"max_connections", "max_connections_per_address", "header_timeout", "idle_timeout",
            "write_timeout"},
           "web.");
  for (const auto& e : f.entries()) r.attempt([&] { apply_web_key(r, web, e.key, e.value); });
  const auto per_address = f.get("max_connections_per_address");
  if (!per_address) {
    web.max_connections_per_address =
        std::min(web.max_connections_per_address, web.max_connections);
  } else if (web.max_connections_per_address > web.max_connections) {
    r.attempt([&] {
      r.fail(*per_address, fmt::format("must not exceed max_connections ({}), got {}",
                                       web.max_connections, web.max_connections_per_address));
    });
  }
  return web;
}

// `listen:` (or the default when absent): its grammar always; with
// check_listen also whether it can be bound right now.
void parse_listen(const Reader& r, const std::optional<Item>& item, const YAML::Node& root,
                  Config& config) {
  const YAML::Mark mark = item ? item->mark : root.Mark();
  if (item) config.listen = r.string(*item);
  if (auto err = detail::check_listen(config.listen)) r.fail(mark, *err);
  if (!r.options().check_listen) return;
  const auto address = net::parse_listen_address(config.listen, nullptr);
  if (auto problem = detail::try_listen(*address)) {
    const std::string what =
        item ? "listen: " + problem->message
             : fmt::format("listen (the default {}): {}", config.listen, problem->message);
    if (!problem->in_use) r.fail(mark, what);  // throws
    // Taken, most often by the exporter running on this very config.
    r.warn(mark, what + " (is the exporter already running? serve cannot start beside it)");
  }
}

// listen, min_interval, metrics (and buckets), rows, diagnosis, web: read before
// the targets, which are checked against min_interval and the gap buckets.
void parse_top_level(const Reader& r, const Fields& top, const YAML::Node& root, Config& config,
                     detail::Context& ctx) {
  r.attempt([&] { parse_listen(r, top.get("listen"), root, config); });
  if (auto item = top.get("min_interval")) {
    r.attempt([&] {
      const Duration floor = r.duration(*item);
      if (floor <= Duration::zero())
        r.fail(*item, fmt::format("must be > 0, got {}", format_duration(floor)));
      config.min_interval = ctx.min_interval = floor;
      ctx.min_interval_item = item;
    });
  }
  detail::parse_metrics_sections(r, top, config, ctx);
  if (auto rows = top.get("rows")) r.attempt([&] { config.rows = parse_rows(r, *rows); });
  if (auto diagnosis = top.get("diagnosis"))
    r.attempt([&] { config.diagnosis = parse_diagnosis(r, *diagnosis); });
  if (auto web = top.get("web")) r.attempt([&] { config.web = parse_web(r, *web); });
  if (auto pe = top.get("probe_endpoint"))
    r.attempt([&] { config.probe_endpoint = detail::parse_probe_endpoint(r, *pe); });
}

Config parse_document(Reader& r, const std::string& yaml_text) {
  YAML::Node root = detail::load_single_document(r, yaml_text);
  detail::check_structure(r, root);
  Fields top(r, Item{root, root.Mark(), ""}, "",
             {"listen", "min_interval", "defaults", "prompts", "targets", "metrics", "buckets",
              "rows", "diagnosis", "limits", "web", "probe_endpoint", "otlp"},
             "");
  Config config;
  detail::Context ctx;
  parse_top_level(r, top, root, config, ctx);
  if (auto limits = top.get("limits")) r.attempt([&] { config.limits = parse_limits(r, *limits); });
  r.set_limits(config.limits);
  if (auto otlp = top.get("otlp")) r.attempt([&] { config.otlp = detail::parse_otlp(r, *otlp); });
  const std::size_t errors_before_prompts = r.error_count();
  r.attempt([&] { config.prompts = parse_prompts(r, top.get("prompts"), root); });
  ctx.prompts = config.prompts;
  ctx.prompts_complete = r.error_count() == errors_before_prompts;
  Target defaults = detail::parse_defaults(r, top.get("defaults"), ctx);
  if (top.has("targets") || !top.misspelt("targets")) {
    r.attempt(
        [&] { config.targets = detail::parse_targets(r, top.require("targets"), defaults, ctx); });
  }
  if (const auto& keep = r.options().keep_target; keep && r.error_count() == 0)
    std::erase_if(config.targets, [&](const Target& t) { return !keep(t.name); });
  // Counted on a config without errors only: a half-read one would be miscounted.
  if (r.error_count() == 0) r.attempt([&] { detail::check_max_series(r, top, config, ctx); });
  return config;
}

// File order: what an operator fixes top to bottom. One problem reached
// twice (two targets inheriting it) is said once.
std::vector<Diagnostic> in_file_order(std::vector<Diagnostic> found) {
  std::stable_sort(found.begin(), found.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return std::pair(a.line, a.column) < std::pair(b.line, b.column);
  });
  found.erase(std::unique(found.begin(), found.end()), found.end());
  return found;
}

}  // namespace

Config parse(const std::string& yaml_text, const std::string& file_name,
             const std::string& base_dir, const LoadOptions& options) {
  detail::Collected found;
  Reader r(file_name, base_dir, found, options);
  Config config;
  r.attempt([&] { config = parse_document(r, yaml_text); });
  if (!found.errors.empty()) throw ConfigError(in_file_order(std::move(found.errors)));
  config.source_file = file_name;
  config.findings.warnings = in_file_order(std::move(found.findings.warnings));
  config.findings.not_checked = in_file_order(std::move(found.findings.not_checked));
  return config;
}

Config load_file(const std::string& path, const LoadOptions& options) {
  // Bounded like every file it names: `check-config /dev/zero` ends at once.
  util::FileRead file = util::read_bounded_file(path, kMaxConfigFileBytes, "config files");
  if (!file.ok()) {
    const bool by_errno =
        file.problem == util::FileProblem::missing || file.problem == util::FileProblem::unreadable;
    throw ConfigError(path, 0, 0,
                      fmt::format("cannot read config file: {}",
                                  by_errno ? std::strerror(file.error_number) : file.error));
  }
  std::string base_dir = std::filesystem::path(path).parent_path().string();
  return parse(file.content, path, base_dir, options);
}

}  // namespace lse::config
