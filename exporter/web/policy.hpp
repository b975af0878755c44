// What a new connection to the exporter must satisfy, kept current with the
// `--web.config.file` on disk. exporter-toolkit re-reads its file on every
// request (and the certificates on every handshake) so that an edited file or
// a rotated certificate applies without a restart; here the same holds per
// new connection, at the cost of a stat() per file: the web config and the
// PEM files it names are re-read only when one of them changed (mtime, ctime,
// size or inode; Kubernetes swaps Secret volumes by symlink, which moves the
// inode). A change that does not load is refused like a bad config reload:
// the previous policy stays in force (it is the operator's last valid
// choice, so nothing opens up) and the problem is reported once.
#pragma once
#include <utility>  // before Asio with GCC 12 / C++20 (STYLE.md)

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "web/basic_auth.hpp"
#include "web/web_config.hpp"

namespace lse::web {

struct Policy {
  WebConfig config;
  std::shared_ptr<boost::asio::ssl::context> tls;  // null: plain HTTP
  bool requires_auth() const { return !config.basic_auth_users.empty(); }
};

class PolicyFile {
 public:
  // Loads the file and builds its TLS context now; throws
  // config::ConfigError (file:line:col) when either fails.
  explicit PolicyFile(std::string path);

  struct Current {
    std::shared_ptr<const Policy> policy;  // never null
    std::optional<std::string> refused;    // a change that was refused just now
    bool reread = false;                   // a change was taken just now
  };

  // For a new connection. Not thread-safe: call from one thread (the
  // server's I/O thread).
  Current current();

  const std::string& path() const { return path_; }

 private:
  struct Stamp {
    bool exists = false;
    long long mtime_ns = 0, ctime_ns = 0, size = 0, inode = 0, device = 0;
    bool operator==(const Stamp&) const = default;
  };
  static Stamp stamp_of(const std::string& path);
  std::vector<Stamp> stamps_of(const WebConfig& config) const;
  static std::vector<std::string> files_of(const WebConfig& config);

  std::string path_;
  std::shared_ptr<const Policy> policy_;
  std::vector<std::string> watched_;  // the web config and the PEM files of the last attempt
  std::vector<Stamp> stamps_;         // of `watched_` when last read
};

}  // namespace lse::web
