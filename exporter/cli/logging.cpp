// spdlog formatter for logfmt and JSON lines.
#include "cli/logging.hpp"

#include <spdlog/formatter.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <ctime>

#include "util/json.hpp"

namespace lse::cli {
namespace {

std::string timestamp(spdlog::log_clock::time_point tp) {
  const auto secs = std::chrono::time_point_cast<std::chrono::seconds>(tp);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(tp - secs).count();
  const std::time_t t = spdlog::log_clock::to_time_t(tp);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return std::string(buf) + "." + (ms < 100 ? (ms < 10 ? "00" : "0") : "") + std::to_string(ms) +
         "Z";
}

class LineFormatter final : public spdlog::formatter {
 public:
  explicit LineFormatter(bool json) : json_(json) {}
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const std::string level(spdlog::level::to_string_view(msg.level).data(),
                            spdlog::level::to_string_view(msg.level).size());
    const std::string text(msg.payload.data(), msg.payload.size());
    std::string line;
    if (json_) {
      line = "{\"ts\":\"" + timestamp(msg.time) + "\",\"level\":";
      json::append_quoted(line, level);
      line += ",\"msg\":";
      json::append_quoted(line, text);
      line += "}\n";
    } else {
      line = "ts=" + timestamp(msg.time) + " level=" + level + " " + text + "\n";
    }
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
