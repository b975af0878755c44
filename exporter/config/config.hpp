// The validated configuration (DESIGN §4). Produced by config::load_file /
// config::parse; every other module only reads it.
#pragma once
#include <utility>
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "api/adapter.hpp"
#include "histogram/exponential.hpp"
#include "util/json.hpp"

namespace lse::config {

using Duration = std::chrono::nanoseconds;

// One finding at a place in the config file: an error, a warning, or a
// check that was skipped. line 0: the file itself, not a place in it.
struct Diagnostic {
  std::string file;
  int line = 0;    // 1-based; 0 when not tied to a line
  int column = 0;  // 1-based
  std::string message;

  // "file:line:col: message" (1-based), or "file: message" when line is 0.
  std::string where_and_what() const;
  bool operator==(const Diagnostic&) const = default;
};

// The errors of a config file, always with a place, in file order. what() is
// one "file:line:col: message" line per error (a single error: exactly that
// line); file(), line(), column() and message() are those of the first.
class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string file, int line, int col, std::string message);
  // `errors` must not be empty.
  explicit ConfigError(std::vector<Diagnostic> errors);
  const std::string& file() const { return errors_.front().file; }
  int line() const { return errors_.front().line; }
  int column() const { return errors_.front().column; }
  const std::string& message() const { return errors_.front().message; }
  const std::vector<Diagnostic>& errors() const { return errors_; }

 private:
  std::vector<Diagnostic> errors_;
};

// What validation found in a file that is valid: warnings (check-config
// prints them, `serve` logs them) and the checks --no-env-check skipped. Not
// a setting: always compares equal, so a reload does not see a change in it.
struct Findings {
  std::vector<Diagnostic> warnings;
  std::vector<Diagnostic> not_checked;

  bool operator==(const Findings&) const { return true; }
};

// How much of the environment load_file checks besides the file itself.
struct LoadOptions {
  // Resolve the listen host and bind its port once (then close it again).
  // For check-config and startup, never for a reload: the running exporter
  // holds the port itself.
  bool check_listen = false;
  // Read every secret (auth env variables and files, TLS client cert and
  // key). false (--no-env-check): check only their names and paths and list
  // them in Findings::not_checked; their values stay empty.
  bool read_secrets = true;
  // Check that rows can be appended at `rows.path` (a regular file or one
  // that can be created; never a FIFO, device or directory), without
  // writing or blocking. For check-config, `serve`'s start and reloads.
  bool check_rows_path = false;
  // The targets this process runs (`serve --shard.*`, shard/shard.hpp):
  // every target is validated, then those it rejects are left out of the
  // Config before its series are counted against metrics.max_series, which
  // so bounds what one replica exposes. Empty: every target.
  std::function<bool(std::string_view target)> keep_target;
};

struct Timeouts {
  Duration first_token = std::chrono::seconds(30);
  Duration idle = std::chrono::seconds(30);
  Duration total = std::chrono::seconds(180);

  bool operator==(const Timeouts&) const = default;
};

// Secret material: the value is resolved at load time; `source` says where it
// came from ("env OPENAI_API_KEY", "file /run/secrets/key") for messages.
struct Secret {
  std::string value;
  std::string source;

  bool operator==(const Secret&) const = default;
};

struct Auth {
  enum class Kind { none, bearer, header } kind = Kind::none;
  std::string header_name = "Authorization";  // for Kind::header
  Secret secret;

  bool operator==(const Auth&) const = default;
};

struct Tls {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  std::string server_name;  // SNI + verification name override
  bool insecure_skip_verify = false;

  bool operator==(const Tls&) const = default;
};

struct Prompt {
  std::string name;
  std::string text;
  std::string source;  // "inline", "built in" (built_in_prompts.hpp) or the file path

  bool operator==(const Prompt&) const = default;
};

// Histogram bucket bounds (DESIGN §3 defaults): one setting per histogram
// family, each overridable under `metrics.buckets:` (or the older top-level
// `buckets:`). The per-probe gap histograms default to the gap buckets in
// effect, so an override of `gap` alone moves them too (as it always did).
struct Buckets {
  std::vector<double> gap{.005, .01, .02, .03, .05, .075, .1, .15, .2, .25,
                          .3,   .4,  .5,  .75, 1,   1.5,  2,  3,   5,  10};
  std::vector<double> probe_gap_p95 = gap;
  std::vector<double> probe_max_gap = gap;
  std::vector<double> ttft{.05, .1, .2, .3, .5, .75, 1, 1.5, 2, 3, 5, 7.5, 10, 15, 20, 30, 60};
  std::vector<double> duration{.05, .1, .25, .5, 1,  2,  3,   5,   7.5, 10,
                               15,  20, 30,  45, 60, 90, 120, 180, 300};
  std::vector<double> tail{.05, .1, .25, .5, 1,  2,  3,   5,   7.5, 10,
                           15,  20, 30,  45, 60, 90, 120, 180, 300};
  std::vector<double> phase{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30};
  std::vector<double> tokens_per_second{1, 2, 5, 10, 20, 30, 50, 75, 100, 150, 200, 300, 500, 1000};
  // Completion tokens per content chunk (1 when a server sends token by token).
  std::vector<double> tokens_per_chunk{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64};

  // The keys under `buckets:`, in the order the dump writes them.
  static constexpr std::array<std::string_view, 9> kKeys = {
      "gap",   "probe_gap_p95",     "probe_max_gap",   "ttft", "duration", "tail",
      "phase", "tokens_per_second", "tokens_per_chunk"};
  // The setting of a key of kKeys; nullptr for any other key.
  const std::vector<double>* named(std::string_view key) const;
  std::vector<double>* named(std::string_view key);

  bool operator==(const Buckets&) const = default;
};

// What llm_stream_phase_seconds is: a histogram with the phase buckets, a
// histogram with only the +Inf bucket (`_sum` and `_count` kept, so
// rate(_sum)/rate(_count) still averages a phase), or no series at all.
enum class PhaseSeries { histogram, sum_count, off };

// A config implying more series than this is refused (metrics.max_series).
inline constexpr std::uint64_t kDefaultMaxSeries = 100000;
// A scrape whose exposition would pass this many bytes (uncompressed) is
// refused with 500 and a warning, its render stopped there
// (metrics.max_scrape_bytes); the default max_series renders ~12 MB.
inline constexpr std::uint64_t kDefaultMaxScrapeBytes = 64ull << 20;

// How /metrics spends series: the `metrics:` section besides its buckets.
struct MetricsOptions {
  PhaseSeries phases = PhaseSeries::histogram;
  // false: the prompts of a target share one series set without a prompt
  // label (prompts are still probed and kept apart in rows and reports).
  bool per_prompt = true;
  std::uint64_t max_series = kDefaultMaxSeries;
  std::uint64_t max_scrape_bytes = kDefaultMaxScrapeBytes;
  // Native (sparse, exponential) histograms beside or instead of the classic
  // buckets, served in the protobuf exposition (metrics.native; `native:
  // false` is nullopt). classic: false leaves histograms without buckets in
  // every format (native only); at least one of the two is on.
  std::optional<histogram::ExponentialSettings> native = histogram::ExponentialSettings{};
  bool classic = true;

  bool operator==(const MetricsOptions&) const = default;
};

// Thresholds of the four-shape diagnosis (DESIGN §7).
struct DiagnosisThresholds {
  double queue_ttft_seconds = 2.0;             // TTFT p50 above this ...
  double queue_gap_p95_seconds = 0.15;         // ... while gap p95 stays below this
  double transport_gap_ratio = 4.0;            // gap p95 (or max) / gap p50 at least this ...
  double transport_min_stall_ratio = 0.2;      // ... or this share of probes stalled
  double long_answer_duration_seconds = 20.0;  // duration p50 above this with flat gaps
  double spread_ratio = 2.0;                   // p95/p50 of TTFT or duration above this
  int min_probes = 5;                          // fewer probes: no verdict
  // Release evidence (transport vs generation): a stall ends in a burst when
  // at least burst_chunks more chunks came right behind the one that ended
  // it; transport needs release_share of stalls in bursts, of chunk pairs in
  // one read, or of answers all at once.
  int burst_chunks = 2;
  double release_share = 0.5;
  // A note beside the verdicts (not a shape): when the window's median
  // completion tokens per content chunk is at least this, or at most its
  // inverse, the server sends several tokens per chunk (or several chunks
  // per token), and gaps are per chunk, not per token.
  double tokens_per_chunk_ratio = 2.0;

  bool operator==(const DiagnosisThresholds&) const = default;
};

// Where something was defined in the config file, for messages. Not a
// setting: two configs that differ only in where a target stands are equal
// (reload compares configs by value and must not restart a moved target).
struct SourceLine {
  int value = 0;
  bool operator==(const SourceLine&) const { return true; }
};

// What the on-call alerts compare a target's streams with (`alert:`), exported
// as the llm_stream_alert_* gauges that config/prometheus/alerting_rules.yml
// reads, so a reasoning model can have its own TTFT bar. The defaults are the
// rules' own fallbacks (docs/runbook.md).
struct AlertThresholds {
  Duration ttft = std::chrono::seconds(5);  // TTFT p95 above it: LLMStreamTTFTP95High
  // The typical (median) probe's largest gap above it: LLMStreamStalling.
  Duration worst_gap = std::chrono::seconds(1);
  // Share of probes with at least one stall above it: LLMStreamStalling and
  // LLMStreamStallsFrequent.
  double stall_share = 0.2;

  bool operator==(const AlertThresholds&) const = default;
};

// How requests look on the wire: our own plain headers, or a desktop
// browser's fetch() (`client: browser`), which is what proxies that treat
// browsers differently get to see.
enum class ClientStyle { plain, browser };

// Which HTTP a target's probes speak (`http_version:`): "1.1"; "2" (h2 by
// ALPN over TLS, required, or prior-knowledge h2c over http://); "auto"
// (over TLS offer h2 and http/1.1 and speak what the server picks; over
// http:// HTTP/1.1). docs/http2.md.
enum class HttpVersion { v1_1, v2, automatic };

// The HTTP/2 flow-control windows we announce (`http2:`): a browser's
// (Chromium: 6 MiB per stream, 15 MiB per connection) unless set.
struct Http2Windows {
  static constexpr std::uint32_t kDefaultStreamWindow = 6u * 1024 * 1024;
  static constexpr std::uint32_t kDefaultConnectionWindow = 15u * 1024 * 1024;
  static constexpr std::uint32_t kMin = 65535;        // RFC 9113's initial window
  static constexpr std::uint32_t kMax = 0x7fffffffu;  // 2^31 - 1
  std::uint32_t stream_window = kDefaultStreamWindow;
  std::uint32_t connection_window = kDefaultConnectionWindow;

  bool operator==(const Http2Windows&) const = default;
};

struct Target {
  std::string name;
  std::string url;  // base URL, e.g. https://api.openai.com/v1
  api::Dialect api = api::Dialect::openai_chat;
  std::string model;
  Duration interval = std::chrono::seconds(60);
  double jitter = 0.1;  // fraction of interval, uniformly +/- (0 disables)
  Timeouts timeout;
  Duration stall_threshold = std::chrono::milliseconds(250);
  AlertThresholds alert;
  int warmup = 2;
  int max_tokens = 256;
  double temperature = 0;
  api::CountSet count;
  Auth auth;
  std::vector<std::pair<std::string, std::string>> headers;
  // Lower-case names of the headers whose value was read from env: or
  // file: (a secret, masked wherever shown, whatever the name).
  std::vector<std::string> secret_headers;
  std::vector<std::string> accept_encoding;  // empty = identity
  ClientStyle client = ClientStyle::plain;
  std::vector<std::string> prompts;  // names in Config::prompts
  Tls tls;
  std::string proxy_url;
  bool proxy_from_environment = false;
  bool include_usage = true;  // send stream_options.include_usage
  json::Value body;           // extra request body (object or null)
  std::size_t max_event_bytes = 1 << 20;
  // Unset: `client: browser` speaks "auto" as a browser would, plain "1.1"
  // (effective_http_version).
  std::optional<HttpVersion> http_version;
  Http2Windows http2;
  // Extra labels on every series of the target (`labels:`), by name.
  std::map<std::string, std::string> labels;
  // gen_ai.provider.name of the target's OTLP metrics (`provider:`); empty:
  // derived from the API dialect and the URL's host (otlp/attributes.hpp).
  std::string provider;
  SourceLine line;  // where the target was defined

  bool operator==(const Target&) const = default;
};

// The HTTP a target speaks: its http_version, else "auto" for `client:
// browser` and "1.1" for plain.
HttpVersion effective_http_version(const Target& target);
// "1.1", "2" or "auto", as the config spells it.
std::string_view to_string(HttpVersion version);

struct Rows {
  std::string path;  // empty: no file
  std::uint64_t max_size = 64ull << 20;
  int keep = 5;
  std::size_t ring = 1000;  // rows kept in memory for /api/v1/probes
  // Bytes the ring may hold (each row's real heap size, its gaps included):
  // the oldest rows leave first when either bound is reached.
  std::uint64_t memory = 64ull << 20;
  static constexpr std::uint64_t kMinMemory = 1ull << 20;   // 1 MiB
  static constexpr std::uint64_t kMaxMemory = 64ull << 30;  // 64 GiB

  bool operator==(const Rows&) const = default;
};

// The exporter's own HTTP server (`web:`): how many connections it keeps
// and how long it waits for each (server::Limits says what each does). A
// reload applies them to new connections and the next read or write of
// open ones.
struct Web {
  std::uint64_t max_connections = 64;
  std::uint64_t max_connections_per_address = 32;     // at most max_connections
  Duration header_timeout = std::chrono::seconds(5);  // a request, from its first byte
  Duration idle_timeout = std::chrono::seconds(30);   // keep-alive, between requests
  Duration write_timeout = std::chrono::seconds(30);  // one response
  // Neither cap may be set above this (every connection is a file descriptor).
  static constexpr std::uint64_t kMaxConnections = 65536;

  bool operator==(const Web&) const = default;
};

// Probing a paid API faster than this is refused unless `min_interval:`
// lowers it: a typo like `interval: 1ms` must not hammer a provider.
inline constexpr Duration kDefaultMinInterval = std::chrono::seconds(1);

// Caps on the files the config names (`limits:`): a prompt or secret path
// set by mistake to /dev/zero, a FIFO or a growing log is refused at load
// (util/bounded_file.hpp), never read whole or waited on.
struct Limits {
  std::uint64_t prompt_file_bytes = 1ull << 20;   // 1 MiB
  std::uint64_t secret_file_bytes = 64ull << 10;  // 64 KiB
  // Neither may be set above this: no prompt or key is a gigabyte.
  static constexpr std::uint64_t kMaxBytes = 1ull << 30;

  bool operator==(const Limits&) const = default;
};

// `probe_endpoint:`: the guard of GET /probe?target= (docs/probe-endpoint.md).
// On-demand probes of one target are spaced by the config's min_interval.
struct ProbeEndpointOptions {
  // On-demand probes running at once; one more is answered 503. 0 turns the
  // on-demand probe off (403), /probe?id= pages stay.
  std::uint64_t max_concurrent = 2;
  static constexpr std::uint64_t kMaxConcurrent = 64;

  bool operator==(const ProbeEndpointOptions&) const = default;
};

// The optional OTLP/HTTP push of the measurements (`otlp:`, docs/otlp.md).
// The OTEL_EXPORTER_OTLP_* and OTEL_RESOURCE_ATTRIBUTES variables are read
// at load and fill what the section leaves out.
struct OtlpOptions {
  enum class Protocol { http_protobuf, http_json };
  enum class Temporality { cumulative, delta };
  // The URL every export is POSTed to: `endpoint:` (or
  // OTEL_EXPORTER_OTLP_ENDPOINT) with /v1/metrics appended, or
  // OTEL_EXPORTER_OTLP_METRICS_ENDPOINT as it is.
  std::string endpoint;
  std::string endpoint_source;  // "config", or the variable it came from
  std::vector<std::pair<std::string, std::string>> headers;
  // Lower-case names of headers whose value came from env:, file: or
  // OTEL_EXPORTER_OTLP_HEADERS: never shown, whatever the name.
  std::vector<std::string> secret_headers;
  Duration interval = std::chrono::seconds(60);
  Duration timeout = std::chrono::seconds(10);
  Protocol protocol = Protocol::http_protobuf;
  Temporality temporality = Temporality::cumulative;
  bool gzip = false;           // compression: gzip
  std::string ca_file;         // https: trust this CA instead of the system's
  std::size_t max_queue = 16;  // export batches waiting; the oldest is dropped beyond
  // OTEL_RESOURCE_ATTRIBUTES and `resource:` (which wins), in order.
  std::vector<std::pair<std::string, std::string>> resource;

  bool operator==(const OtlpOptions&) const = default;
};

struct Config {
  std::string source_file;
  std::string listen = ":9687";
  Duration min_interval = kDefaultMinInterval;  // floor of every interval
  std::map<std::string, Prompt> prompts;
  std::vector<Target> targets;
  Buckets buckets;  // metrics.buckets (or the older top-level buckets:)
  MetricsOptions metrics;
  Rows rows;
  Limits limits;
  DiagnosisThresholds diagnosis;
  Web web;
  ProbeEndpointOptions probe_endpoint;
  std::optional<OtlpOptions> otlp;  // no section: no push
  Findings findings;                // warnings and skipped checks of the file (compares equal)

  bool operator==(const Config&) const = default;
};

// Parses and validates. Throws ConfigError with every problem of the file
// (file:line:col each, in file order); a YAML syntax error stops at itself.
// Relative prompt/secret/CA paths resolve against the config file's folder.
Config load_file(const std::string& path, const LoadOptions& options = {});
Config parse(const std::string& yaml_text, const std::string& file_name,
             const std::string& base_dir, const LoadOptions& options = {});

// "k1=v1,k2=v2" as OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES
// write it: items trimmed, keys and values %-decoded, empty items skipped;
// nullopt when an item has no '=' or no key. "" gives an empty list.
std::optional<std::vector<std::pair<std::string, std::string>>> parse_otel_key_values(
    std::string_view text);

// How many series /metrics holds for a config (the families of
// metrics/families.hpp, the process_* series included): `at_start` right
// after the config is applied (every series is zero-initialised), `at_most`
// once every finish reason has been seen (those counters appear on first
// sight). metrics.max_series bounds at_most.
struct SeriesCount {
  std::uint64_t at_start = 0;
  std::uint64_t at_most = 0;
};
SeriesCount series_count(const Config& config);

// The bounds of the histogram whose bucket setting is `key` (Buckets::kKeys):
// its buckets; for "phase" none (only +Inf) with phases: sum_count, and
// nullopt (no series) with phases: off.
std::optional<std::vector<double>> histogram_bounds(const Config& config, std::string_view key);

// 1234567 -> "1,234,567": how counts of series are written in messages.
std::string with_thousands(std::uint64_t n);

// Parses "250ms", "1.5s", "2m", "1h", "500us" (Prometheus-style, plus fractions).
std::optional<Duration> parse_duration(const std::string& text);

// Formats a duration in the form parse_duration reads back: "250ms", "1.5s",
// "1m30s", "0s" (used by dump_redacted and log lines).
std::string format_duration(Duration d);

// YAML dump of the effective config with every secret replaced by "<secret>".
// Headers whose names look sensitive (is_sensitive_header) are redacted too.
std::string dump_redacted(const Config& config);

// True for header names that carry credentials, judged by the name's last
// word (Authorization, Cookie, X-Api-Key, *-Key, *-Token, *-Secret, *-Auth;
// not x-portkey-provider): their values are never shown.
bool is_sensitive_header(std::string_view name);

// True when the target's header `name` holds a credential: a sensitive name,
// or a value read from env: or file:.
bool is_secret_header(const Target& target, std::string_view name);

// True for `body:` keys that name a credential (api_key, accessToken,
// client_secret; not max_tokens): their values are never shown.
bool is_credential_key(std::string_view key);

// Every secret value a target sends upstream, resolved: its auth secret (and
// the credential after a scheme such as "Bearer "), the values of its
// sensitive headers (is_sensitive_header), its URL's query values but
// api-version's, and body values under credential keys (is_credential_key).
// What an upstream echoes of these is masked (util/redact.hpp). Secrets
// that were not read (--no-env-check) are empty and not listed.
std::vector<std::string> secret_values(const Target& target);
// The same for every target, without duplicates.
std::vector<std::string> secret_values(const Config& config);

}  // namespace lse::config
