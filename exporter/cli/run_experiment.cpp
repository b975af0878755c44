// The experiment of `run` from a config file or from the environment.
#include "cli/run_experiment.hpp"

#include <utility>
#include <fmt/format.h>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "api/adapter.hpp"
#include "config/built_in_prompts.hpp"
#include "net/url.hpp"
#include "util/bounded_file.hpp"

namespace lse::cli {
namespace {

std::string without_trailing_newlines(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

// Bounded like the config's prompt files (util/bounded_file.hpp, the
// default limits.prompt_file_bytes): `run /dev/zero` ends at once.
std::string read_prompt_file(const std::string& path) {
  util::FileRead file =
      util::read_bounded_file(path, config::Limits{}.prompt_file_bytes, "prompt files");
  if (file.problem == util::FileProblem::directory)
    throw UsageError(fmt::format("prompt file '{}' is a directory", path));
  if (!file.ok()) {
    const bool by_errno =
        file.problem == util::FileProblem::missing || file.problem == util::FileProblem::unreadable;
    throw UsageError(fmt::format("cannot read prompt file '{}': {}", path,
                                 by_errno ? std::strerror(file.error_number) : file.error));
  }
  std::string s = without_trailing_newlines(std::move(file.content));
  if (s.find_first_not_of(" \t\r\n") == std::string::npos)
    throw UsageError(fmt::format("prompt file '{}' is empty", path));
  return s;
}

// A prompt's name from its file: the stem, made unique ("short", "short-2").
std::string prompt_name(const std::string& path, const std::vector<config::Prompt>& taken) {
  std::string stem = std::filesystem::path(path).stem().string();
  std::string clean;
  for (char c : stem)
    clean +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  if (clean.empty()) clean = "prompt";
  std::string name = clean;
  for (int n = 2;; ++n) {
    bool used = false;
    for (const auto& p : taken) used |= p.name == name;
    if (!used) return name;
    name = fmt::format("{}-{}", clean, n);
  }
}

}  // namespace

Experiment from_config(const RunOptions& o, const Positionals& pos) {
  if (!pos.files.empty())
    throw UsageError(
        fmt::format("prompt files ('{}') and --config do not mix: the config names the prompts",
                    pos.files.front()));
  config::Config cfg;
  try {
    cfg = config::load_file(o.config_path);
  } catch (const config::ConfigError& e) {
    throw UsageError(e.what());
  }
  Experiment ex;
  ex.thresholds = cfg.diagnosis;
  ex.gap_buckets = cfg.buckets.gap;
  for (const auto& t : cfg.targets) {
    ex.targets.push_back(t);
    std::vector<config::Prompt> ps;
    for (const auto& name : t.prompts) {
      ps.push_back(cfg.prompts.at(name));
      ex.order.emplace_back(t.name, name);
    }
    ex.prompts.push_back(std::move(ps));
  }
  return ex;
}

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The URL as an error may show it: a query can carry a key.
std::string url_shown(const std::string& url) { return url.substr(0, url.find_first_of("?#")); }

// --api, else MC_API, else openai-chat; the error lists the supported values.
api::Dialect dialect_of(const RunOptions& o) {
  const std::string name = !o.api.empty() ? o.api : env("MC_API");
  if (name.empty()) return api::Dialect::openai_chat;
  const auto dialect = api::parse_dialect(name);
  if (!dialect)
    throw UsageError(fmt::format("{}: unknown api '{}' (supported: {})",
                                 o.api.empty() ? "MC_API" : "--api", name, api::dialect_list()));
  return *dialect;
}

// MC_API_KEY, else the variable the provider's SDKs read (ANTHROPIC_API_KEY, ...).
config::Auth key_of(api::Dialect dialect) {
  config::Auth auth;
  std::string name = "MC_API_KEY";
  std::string key = env("MC_API_KEY");
  if (const auto convention = api::key_header(dialect).env; key.empty() && !convention.empty()) {
    name = std::string(convention);
    key = env(name.c_str());
  }
  if (key.empty()) return auth;
  auth.kind = config::Auth::Kind::bearer;  // in the dialect's key header
  auth.secret = {key, "env " + name};
  return auth;
}

}  // namespace

Experiment from_environment(const RunOptions& o, const Positionals& pos) {
  const std::string base = env("MC_BASE_URL"), model = env("MC_MODEL");
  if (base.empty())
    throw UsageError(
        "no --config and MC_BASE_URL is not set: give --config FILE, or set MC_BASE_URL "
        "(and MC_MODEL, MC_API_KEY); prompt files are optional");
  if (model.empty())
    throw UsageError("MC_BASE_URL is set but MC_MODEL is not: set the model name to probe");
  const auto url = net::parse_url(base);
  if (!url)
    throw UsageError(fmt::format("MC_BASE_URL is not an http(s) URL: '{}'", url_shown(base)));
  Experiment ex;
  config::Target t;  // the config defaults (config.hpp) are the defaults here too
  t.name = url->host;
  t.url = base;
  t.api = dialect_of(o);
  t.model = model;
  t.auth = key_of(t.api);
  t.proxy_from_environment = true;  // HTTP(S)_PROXY / NO_PROXY, as curl and every SDK
  std::vector<config::Prompt> ps;
  for (const auto& f : pos.files) ps.push_back({prompt_name(f, ps), read_prompt_file(f), f});
  // No prompt files: the built-in set, as a config without prompts: has.
  if (pos.files.empty())
    for (const auto& b : config::built_in_prompts())
      ps.push_back({std::string(b.name), without_trailing_newlines(std::string(b.text)),
                    std::string(config::kBuiltInPromptSource)});
  for (const auto& p : ps) {
    t.prompts.push_back(p.name);
    ex.order.emplace_back(t.name, p.name);
  }
  ex.targets.push_back(std::move(t));
  ex.prompts.push_back(std::move(ps));
  return ex;
}

}  // namespace lse::cli
