// `check-config` (see check_config_command.hpp).
#include "cli/check_config_command.hpp"

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <iostream>

#include "api/adapter.hpp"
#include "config/built_in_prompts.hpp"
#include "config/config.hpp"
#include "net/url.hpp"
#include "shard/shard.hpp"

namespace lse::cli {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitInvalid = 2;

// "1 target", "2 targets"; "series" is its own plural.
std::string count_of(std::size_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

// "1,200 series at start, at most 1,234": what a config puts on /metrics
// when applied, and with every finish (and, native only, failure) reason seen.
std::string series_figures(const config::SeriesCount& n) {
  return fmt::format("{} series at start, at most {}", config::with_thousands(n.at_start),
                     config::with_thousands(n.at_most));
}

// "shard 0: 3 targets, 1,200 series at start, at most 1,234" per shard: what each replica of a
// sharded deployment runs (series as metrics.max_series counts them there).
void print_shards(const config::Config& cfg, std::uint64_t count, std::ostream& out) {
  for (std::uint64_t k = 0; k < count; ++k) {
    config::Config share = cfg;
    std::erase_if(share.targets, [&](const config::Target& t) {
      return !shard::owns({k, count}, t.name);
    });
    out << fmt::format("shard {} of {}: {}, {}\n", k, count,
                       count_of(share.targets.size(), "target", "targets"),
                       series_figures(config::series_count(share)));
  }
}

}  // namespace

void add_check_config_options(CLI::App& check_config, CheckConfigOptions& o) {
  check_config.add_option("file", o.path, "config file")->required();
  check_config.add_flag("--no-env-check", o.no_env_check,
                        "validate without the secrets present: auth env variables and secret "
                        "files (and TLS client cert/key, the rows path) are listed as not "
                        "checked");
  check_config
      .add_option("--shard.count", o.shard_count,
                  "show each target's shard among this many (serve --shard.count) and "
                  "each shard's targets and series")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 32));
}

std::string describe_target(const config::Target& t) {
  const auto adapter = api::make_adapter(t.api, t.count);
  const auto url = net::parse_url(t.url);
  api::RequestSpec spec;
  spec.model = t.model;
  const std::string where =
      url && adapter ? url->redacted() + adapter->request_path(spec) : std::string("?");
  std::string key = "no key";
  switch (t.auth.kind) {
    case config::Auth::Kind::none: break;
    case config::Auth::Kind::bearer:
      key = fmt::format("key in {} ({})", api::key_header(t.api).name, t.auth.secret.source);
      break;
    case config::Auth::Kind::header:
      key = fmt::format("key in {} ({})", t.auth.header_name, t.auth.secret.source);
      break;
  }
  // The HTTP version only when it is not the HTTP/1.1 of old.
  const config::HttpVersion version = config::effective_http_version(t);
  const std::string http = version == config::HttpVersion::v1_1
                               ? std::string()
                               : fmt::format(", http_version {}", config::to_string(version));
  return fmt::format("{}: {} POST {}, model {}, {}{}", t.name, api::dialect_name(t.api), where,
                     t.model, key, http);
}

std::string describe_prompt(const config::Prompt& prompt) {
  if (prompt.source == "inline") return fmt::format("prompt {}: in the config", prompt.name);
  if (prompt.source == config::kBuiltInPromptSource)
    return fmt::format("prompt {}: built in", prompt.name);
  return fmt::format("prompt {}: file {}", prompt.name, prompt.source);
}

// The series count "at most" is the one metrics.max_series bounds: every
// series the config can put on /metrics, finish reasons and process_*
// included ("at start": before any probe).
std::string summary_line(const std::string& path, const config::Config& cfg) {
  return fmt::format("{}: ok ({}, {}, {})", path, count_of(cfg.targets.size(), "target", "targets"),
                     count_of(cfg.prompts.size(), "prompt", "prompts"),
                     series_figures(config::series_count(cfg)));
}

int check_config_command(const CheckConfigOptions& o, std::ostream& out, std::ostream& err) {
  config::LoadOptions load;
  // The address is tried: taken is a warning (the exporter may run on this
  // config, checked before a reload), any other problem an error.
  load.check_listen = true;
  load.read_secrets = !o.no_env_check;
  load.check_rows_path = true;  // a FIFO or read-only rows path is an error here, not at start
  try {
    const auto cfg = config::load_file(o.path, load);
    for (const auto& w : cfg.findings.warnings) {
      err << config::Diagnostic{w.file, w.line, w.column, "warning: " + w.message}.where_and_what()
          << "\n";
    }
    out << summary_line(o.path, cfg) << "\n";
    for (const auto& t : cfg.targets) {
      out << "  " << describe_target(t);
      if (o.shard_count > 0)
        out << fmt::format(" (shard {} of {})", shard::shard_of(t.name, o.shard_count),
                           o.shard_count);
      out << "\n";
    }
    if (o.shard_count > 0) print_shards(cfg, o.shard_count, out);
    for (const auto& [name, p] : cfg.prompts) out << "  " << describe_prompt(p) << "\n";
    for (const auto& n : cfg.findings.not_checked) {
      out << config::Diagnostic{n.file, n.line, n.column, "not checked: " + n.message}
                 .where_and_what()
          << "\n";
    }
    return kExitOk;
  } catch (const config::ConfigError& e) {
    err << e.what() << "\n" << count_of(e.errors().size(), "error", "errors") << "\n";
    return kExitInvalid;
  }
}

int check_config_command(const CheckConfigOptions& o) {
  return check_config_command(o, std::cout, std::cerr);
}

int check_config_command(const std::string& path) {
  return check_config_command(CheckConfigOptions{path, false});
}

}  // namespace lse::cli
