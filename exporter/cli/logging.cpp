// spdlog formatter for logfmt and JSON lines (see logging.hpp).
#include "cli/logging.hpp"

#include <fmt/format.h>
#include <spdlog/formatter.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "util/json.hpp"
#include "util/wall_clock.hpp"

namespace lse::cli {

std::string log_timestamp(std::chrono::system_clock::time_point time) {
  const auto secs = std::chrono::floor<std::chrono::seconds>(time);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(time - secs).count();
  const auto unix_seconds = static_cast<double>(secs.time_since_epoch().count());
  return fmt::format("{}.{:03}Z", wall_clock::format_utc(unix_seconds, "%Y-%m-%dT%H:%M:%S"), ms);
}

std::string format_logfmt_line(std::string_view level, std::chrono::system_clock::time_point time,
                               std::string_view message) {
  return fmt::format("ts={} level={} {}\n", log_timestamp(time), level, message);
}

std::string format_json_line(std::string_view level, std::chrono::system_clock::time_point time,
                             std::string_view message) {
  std::string line = "{\"ts\":\"" + log_timestamp(time) + "\",\"level\":";
  json::append_quoted(line, level);
  line += ",\"msg\":";
  json::append_quoted(line, message);
  line += "}\n";
  return line;
}

namespace {

class LineFormatter final : public spdlog::formatter {
 public:
  explicit LineFormatter(bool json) : json_(json) {}
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const auto level = spdlog::level::to_string_view(msg.level);
    const std::string_view level_text(level.data(), level.size());
    const std::string_view text(msg.payload.data(), msg.payload.size());
    const std::string line = json_ ? format_json_line(level_text, msg.time, text)
                                   : format_logfmt_line(level_text, msg.time, text);
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<LineFormatter>(json_);
  }

 private:
  bool json_;
};

}  // namespace

void setup_logging(const std::string& level, const std::string& format) {
  auto logger = spdlog::stderr_logger_mt("lse");
  logger->set_formatter(std::make_unique<LineFormatter>(format == "json"));
  logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(logger);
}

}  // namespace lse::cli
