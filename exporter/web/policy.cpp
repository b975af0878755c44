// Keeps the connection policy current with the web config file (see
// policy.hpp for when it is re-read and why a bad change is refused).
#include "web/policy.hpp"

#include <sys/stat.h>

#include <exception>

#include "web/tls_server.hpp"

namespace lse::web {

PolicyFile::PolicyFile(std::string path) : path_(std::move(path)) {
  // Stamps before reading: a change while reading is seen by the next look.
  const Stamp web_config = stamp_of(path_);
  auto config = load_web_config(path_);
  std::vector<Stamp> stamps{web_config};
  for (const auto& s : stamps_of(config)) stamps.push_back(s);
  auto tls = make_tls_server_context(config);
  watched_ = files_of(config);
  stamps_ = std::move(stamps);
  policy_ = std::make_shared<const Policy>(Policy{std::move(config), std::move(tls)});
}

PolicyFile::Current PolicyFile::current() {
  std::vector<Stamp> now;
  for (const auto& file : watched_) now.push_back(stamp_of(file));
  if (now == stamps_) return {policy_, std::nullopt};
  try {
    PolicyFile fresh(path_);
    watched_ = std::move(fresh.watched_);
    stamps_ = std::move(fresh.stamps_);
    policy_ = std::move(fresh.policy_);
    return {policy_, std::nullopt, true};
  } catch (const std::exception& e) {
    // Not retried until a watched file changes again.
    stamps_ = std::move(now);
    return {policy_, std::string(e.what())};
  }
}

std::vector<std::string> PolicyFile::files_of(const WebConfig& config) {
  std::vector<std::string> files{config.file};
  if (config.tls)
    for (const Pem* pem : {&config.tls->cert, &config.tls->key, &config.tls->client_ca})
      if (!pem->file.empty()) files.push_back(pem->file);
  return files;
}

std::vector<PolicyFile::Stamp> PolicyFile::stamps_of(const WebConfig& config) const {
  std::vector<Stamp> out;
  const auto files = files_of(config);
  for (std::size_t i = 1; i < files.size(); ++i) out.push_back(stamp_of(files[i]));
  return out;
}

PolicyFile::Stamp PolicyFile::stamp_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  constexpr long long kNs = 1'000'000'000;
  return {true,
          st.st_mtim.tv_sec * kNs + st.st_mtim.tv_nsec,
          st.st_ctim.tv_sec * kNs + st.st_ctim.tv_nsec,
          static_cast<long long>(st.st_size),
          static_cast<long long>(st.st_ino),
          static_cast<long long>(st.st_dev)};
}

}  // namespace lse::web
