// libFuzzer target for the config reader: the input is the text of a config
// file, parsed by config::parse (the in-memory half of load_file) with the
// files it names resolved against a private base folder. See
// tests/fuzz/README.md for the invariants. Built and run by
// tests/fuzz/fuzz_all.sh.
//
// Only config::ConfigError is caught: any other exception (std::bad_alloc,
// YAML::Exception, std::out_of_range...) escapes and libFuzzer reports it as
// a crash, as it is one in check-config, serve or a reload.
#include <signal.h>
#include <simdjson.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <utility>
#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "fuzz_check.hpp"

namespace {

namespace fs = std::filesystem;
using lse::config::Config;
using lse::config::ConfigError;

constexpr const char* kFileName = "fuzz.yaml";

// The folder relative paths resolve against: what a config's folder holds in
// tests/data/config (prompts/ for the default prompt set, files/ for prompt
// and secret files), so inputs built from those configs load as they do
// there. Created per process under /tmp (pid in the name), removed at exit.
std::string& base_dir() {
  static std::string dir;
  return dir;
}

void write_file(const fs::path& path, std::string_view content) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << content;
}

void remove_base_dir() {
  std::error_code ignored;
  if (!base_dir().empty()) fs::remove_all(base_dir(), ignored);
}

void make_base_dir() {
  const fs::path dir =
      fs::temp_directory_path() / ("lse-config-fuzz-" + std::to_string(::getpid()));
  lse::fuzz::remove_stale("lse-config-fuzz-");
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  write_file(dir / "prompts/short.txt", "Valid-folder prompt short.\n");
  write_file(dir / "prompts/medium.txt", "Valid-folder prompt medium.\n");
  write_file(dir / "prompts/long.txt", "Valid-folder prompt long.\n");
  write_file(dir / "files/ca.pem",
             "placeholder ca.pem: the config loader only checks that it exists\n");
  write_file(dir / "files/cert.pem", "placeholder cert.pem\n");
  write_file(dir / "files/client.crt", "placeholder client.crt\n");
  write_file(dir / "files/client.key", "placeholder client.key\n");
  write_file(dir / "files/custom-prompt.txt",
             "Summarise the plot of Hamlet in five bullet points.\n\n");
  write_file(dir / "files/prompt.txt", "A prompt from a file.\n");
  write_file(dir / "files/header-token.txt", "xapi-file-secret-51d2\r\n");
  write_file(dir / "files/token.txt", "sk-file-secret-7f3a9c\n");
  write_file(dir / "files/empty-token.txt", "");
  write_file(dir / "files/two-line-token.txt", "line-one\nline-two\n");
  fs::create_directories(dir / "rows");
  base_dir() = dir.string();
  // The working directory too: nothing should depend on it, and if
  // something does, it sees this folder and not the repository.
  if (::chdir(base_dir().c_str()) != 0) std::perror("chdir");
  std::atexit(remove_base_dir);
}

// Paths that are not files a person would name in a config, and whose reads
// have effects or may block: /proc/kmsg consumes the kernel log when read as
// root, /sys files call into drivers. Inputs naming them are skipped (see
// README). /dev/ is not skipped: util::read_bounded_file refuses devices and
// FIFOs by stat() before opening, and the fuzzer should check that it does.
// Best effort: a YAML escape ("\x2Fproc") gets past the check; the reads
// are bounded and non-blocking all the same.
bool names_pseudo_files(std::string_view text) {
  for (std::string_view p : {"/proc", "/sys"})
    if (text.find(p) != std::string_view::npos) return true;
  return false;
}

std::size_t count_lines(std::string_view text) {
  // yaml-cpp counts LF, CR and CRLF (and NEL/LS/PS) as line breaks.
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n') +
                                  std::count(text.begin(), text.end(), '\r')) +
         static_cast<std::size_t>(std::count(text.begin(), text.end(), '\x85')) + 1;
}

void check_error(const ConfigError& e, std::string_view text) {
  const auto& errors = e.errors();
  FUZZ_CHECK(!errors.empty(), e.what());
  const std::size_t lines = count_lines(text);
  std::string joined;
  for (std::size_t i = 0; i < errors.size(); ++i) {
    const auto& d = errors[i];
    FUZZ_CHECK(d.file == kFileName, d.where_and_what());
    FUZZ_CHECK(!d.message.empty(), d.where_and_what());
    FUZZ_CHECK(d.line >= 0 && d.column >= 0, d.where_and_what());
    FUZZ_CHECK(static_cast<std::size_t>(d.line) <= lines + 1, d.where_and_what());
    // yaml-cpp counts columns in the UTF-8 it decodes the text to: a text it
    // takes for UTF-16/32 (a leading NUL) or invalid UTF-8 (each bad byte
    // becomes U+FFFD, 3 bytes) can have more columns than bytes.
    FUZZ_CHECK(static_cast<std::size_t>(d.column) <= 4 * text.size() + 2, d.where_and_what());
    // "file:line:col: message"; every error has a place in the file.
    FUZZ_CHECK(d.where_and_what().rfind(std::string(kFileName) + ":", 0) == 0, d.where_and_what());
    if (i > 0) {
      // In file order.
      const auto& p = errors[i - 1];
      FUZZ_CHECK(std::pair(p.line, p.column) <= std::pair(d.line, d.column), e.what());
    }
    if (i > 0) joined += '\n';
    joined += d.where_and_what();
  }
  FUZZ_CHECK(e.line() == errors.front().line && e.column() == errors.front().column, e.what());
}

// A plain (unquoted) scalar that a YAML reader types as something other than
// a string: null, a bool, a number.
bool reads_as_non_string(const YAML::Node& n) {
  if (n.Tag() != "?") return false;  // quoted: a string
  if (n.IsNull()) return true;
  bool b;
  double d;
  return YAML::convert<bool>::decode(n, b) || YAML::convert<double>::decode(n, d);
}

// "Strings ... must be quoted, or the dump would not read back as what it
// shows" (dump.cpp): a string of the config comes back as the same string.
void check_string(const YAML::Node& n, const std::string& expected, const std::string& where,
                  const std::string& dump) {
  FUZZ_CHECK(n.IsDefined() && n.IsScalar(), where + "\n" + dump);
  // yaml-cpp's emitter writes invalid UTF-8 as U+FFFD, as util/json does in
  // the request body: such a string comes back changed, by design.
  if (!simdjson::validate_utf8(expected.data(), expected.size())) return;
  FUZZ_CHECK(n.Scalar() == expected,
             where + ": '" + n.Scalar() + "' != '" + expected + "'\n" + dump);
  FUZZ_CHECK(!reads_as_non_string(n), where + ": '" + expected + "' not quoted\n" + dump);
}

// Every scalar value (not key) under `n`: none holds a loaded secret.
void check_no_secret(const YAML::Node& n, const std::vector<std::string>& secrets,
                     const std::string& where, const std::string& dump) {
  if (n.IsScalar()) {
    for (const auto& s : secrets)
      FUZZ_CHECK(n.Scalar().find(s) == std::string::npos, where + " shows a secret\n" + dump);
  } else if (n.IsSequence()) {
    for (const auto& e : n) check_no_secret(e, secrets, where, dump);
  } else if (n.IsMap()) {
    for (const auto& kv : n) check_no_secret(kv.second, secrets, where, dump);
  }
}

// The dump of /config: complete, strings read back, secrets redacted where
// dump.cpp promises (auth values, sensitive headers, headers and body
// strings holding a loaded secret). Secrets shorter than 8 bytes are left
// out: an env variable such as SHLVL=1 would "show" in every number.
void check_dump(const Config& c, const YAML::Node& doc, const std::string& dump) {
  FUZZ_CHECK(doc.IsMap(), dump);
  const YAML::Node targets = doc["targets"];
  FUZZ_CHECK(targets.IsSequence() && targets.size() == c.targets.size(), dump);
  std::vector<std::string> secrets;
  for (const auto& t : c.targets)
    if (t.auth.secret.value.size() >= 8) secrets.push_back(t.auth.secret.value);
  for (std::size_t i = 0; i < c.targets.size(); ++i) {
    const auto& t = c.targets[i];
    const YAML::Node n = targets[i];
    check_string(n["name"], t.name, "targets[].name", dump);
    check_string(n["model"], t.model, t.name + ".model", dump);
    for (const auto& [label, value] : t.labels)
      check_string(n["labels"][label], value, t.name + ".labels." + label, dump);
    if (t.auth.kind != lse::config::Auth::Kind::none)
      FUZZ_CHECK(n["auth"]["value"].Scalar() == "<secret>", t.name + "\n" + dump);
    if (t.headers.empty()) {
      FUZZ_CHECK(!n["headers"], t.name + "\n" + dump);
    } else {
      FUZZ_CHECK(n["headers"].IsMap() && n["headers"].size() == t.headers.size(),
                 t.name + "\n" + dump);
      for (const auto& kv : n["headers"]) {
        const std::string name = kv.first.Scalar();
        if (lse::config::is_sensitive_header(name))
          FUZZ_CHECK(kv.second.Scalar() == "<secret>", t.name + ".headers." + name + "\n" + dump);
      }
      check_no_secret(n["headers"], secrets, t.name + ".headers", dump);
    }
    if (n["body"]) check_no_secret(n["body"], secrets, t.name + ".body", dump);
  }
  const YAML::Node prompts = doc["prompts"];
  FUZZ_CHECK(prompts.IsMap() && prompts.size() == c.prompts.size(), dump);
  for (const auto& [name, p] : c.prompts)
    check_string(prompts[name]["text"], p.text, "prompts." + name + ".text", dump);
}

// What validation promises about a config it accepts.
void check_config(const Config& c) {
  FUZZ_CHECK(c.source_file == kFileName, c.source_file);
  FUZZ_CHECK(c.min_interval > lse::config::Duration::zero(), "");
  FUZZ_CHECK(!c.targets.empty(), "");
  FUZZ_CHECK(!c.prompts.empty(), "");
  for (const auto& [name, p] : c.prompts) {
    FUZZ_CHECK(p.name == name, name);
    FUZZ_CHECK(p.text.find_first_not_of(" \t\r\n") != std::string::npos, name);
  }
  std::set<std::string> names;
  for (const auto& t : c.targets) {
    FUZZ_CHECK(!t.name.empty(), "");
    FUZZ_CHECK(names.insert(t.name).second, t.name);  // unique
    FUZZ_CHECK(!t.url.empty(), t.name);
    FUZZ_CHECK(!t.model.empty(), t.name);
    FUZZ_CHECK(t.interval >= c.min_interval, t.name);
    FUZZ_CHECK(t.jitter >= 0 && t.jitter <= 0.5, t.name);
    FUZZ_CHECK(t.temperature >= 0 && t.temperature <= 2, t.name);
    FUZZ_CHECK(t.max_tokens >= 1, t.name);
    FUZZ_CHECK(t.warmup >= 0, t.name);
    FUZZ_CHECK(t.max_event_bytes > 0, t.name);
    FUZZ_CHECK(t.stall_threshold > lse::config::Duration::zero(), t.name);
    FUZZ_CHECK(t.timeout.total > lse::config::Duration::zero(), t.name);
    FUZZ_CHECK(t.timeout.first_token > lse::config::Duration::zero(), t.name);
    FUZZ_CHECK(t.timeout.idle > lse::config::Duration::zero(), t.name);
    FUZZ_CHECK(!t.prompts.empty(), t.name);
    std::set<std::string> prompts;
    for (const auto& p : t.prompts) {
      FUZZ_CHECK(c.prompts.count(p) == 1, t.name + ": " + p);
      FUZZ_CHECK(prompts.insert(p).second, t.name + ": " + p);
    }
    for (const auto& [label, value] : t.labels) FUZZ_CHECK(!value.empty(), label);
  }
  FUZZ_CHECK(c.rows.ring >= 1 && c.rows.ring <= 1000000, "");
  FUZZ_CHECK(c.rows.keep >= 0 && c.rows.keep <= 1000, "");
  FUZZ_CHECK(c.rows.max_size > 0, "");
  FUZZ_CHECK(c.limits.prompt_file_bytes <= lse::config::Limits::kMaxBytes, "");
  FUZZ_CHECK(c.limits.secret_file_bytes <= lse::config::Limits::kMaxBytes, "");

  // What /config and check-config do with it. Neither may throw.
  const std::string dump = lse::config::dump_redacted(c);
  FUZZ_CHECK(!dump.empty(), "");
  YAML::Node doc;
  try {
    doc = YAML::Load(dump);
  } catch (const YAML::Exception& e) {
    lse::fuzz::fail("dump_redacted() is not YAML", std::string(e.what()) + "\n" + dump);
  }
  check_dump(c, doc, dump);
  (void)lse::config::secret_values(c);
  (void)lse::config::series_count(c);
  FUZZ_CHECK(c == c, "");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // The secret of tests/data/config/valid/full.yaml.
  ::setenv("LSE_TEST_SECRET", "s3cr3t-from-env", 0);
  make_base_dir();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (names_pseudo_files(text)) return -1;  // not added to the corpus

  // Twice: reading secrets (check-config, serve) and with --no-env-check.
  // Skipping the secret checks never turns a valid file invalid.
  bool valid[2] = {false, false};
  for (int i = 0; i < 2; ++i) {
    lse::config::LoadOptions options;
    options.check_listen = false;  // never binds a port
    options.read_secrets = i == 0;
    try {
      const Config c = lse::config::parse(text, kFileName, base_dir(), options);
      check_config(c);
      valid[i] = true;
    } catch (const ConfigError& e) {
      check_error(e, text);
    }
  }
  if (valid[0] && !valid[1])
    lse::fuzz::fail("valid when secrets are read, invalid with --no-env-check");
  return 0;
}
