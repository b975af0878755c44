// spdlog sink and formatter for the log module's events (see logging.hpp).
#include "cli/logging.hpp"

#include <spdlog/formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "log/log.hpp"

namespace lse::cli {
namespace {

log::Level from_spdlog(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug: return log::Level::debug;
    case spdlog::level::info: return log::Level::info;
    case spdlog::level::warn: return log::Level::warn;
    default: return log::Level::error;
  }
}

// The payload is an event rendered by log::write in the configured format;
// the formatter only puts ts and level in front.
class LineFormatter final : public spdlog::formatter {
 public:
  explicit LineFormatter(log::Format format) : format_(format) {}
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const std::string line =
        log::render_line(format_, from_spdlog(msg.level), msg.time,
                         std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<LineFormatter>(format_);
  }

 private:
  log::Format format_;
};

log::Level level_named(const std::string& name) {
  if (name == "debug") return log::Level::debug;
  if (name == "warn") return log::Level::warn;
  if (name == "error") return log::Level::error;
  return log::Level::info;
}

}  // namespace

void setup_logging(const std::string& level, const std::string& format) {
  const log::Format f = format == "json" ? log::Format::json : log::Format::logfmt;
  const log::Level l = level_named(level);
  log::configure(f, l);
  auto logger = spdlog::stderr_logger_mt("lse");
  logger->set_formatter(std::make_unique<LineFormatter>(f));
  logger->set_level(l == log::Level::debug  ? spdlog::level::debug
                    : l == log::Level::info ? spdlog::level::info
                    : l == log::Level::warn ? spdlog::level::warn
                                            : spdlog::level::err);
  spdlog::set_default_logger(logger);
}

}  // namespace lse::cli
