#include "experiments/sweep_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/error.h"
#include "base/io.h"

namespace podsim::experiments::sweep {

std::string Fingerprint(const nlohmann::json& config) {
  uint64_t h = 1469598103934665603ull;
  for (const unsigned char ch : config.dump()) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

namespace {

// The whole lines of a points log (a torn last line, without its newline, is left out).
std::vector<std::string> LogLines(const std::string& path) {
  std::vector<std::string> lines;
  const std::string text = ReadFile(path);
  for (size_t start = 0, end; (end = text.find('\n', start)) != std::string::npos;
       start = end + 1) {
    lines.push_back(text.substr(start, end - start));
  }
  return lines;
}

}  // namespace

PointsLog::~PointsLog() {
  if (fd_ >= 0) ::close(fd_);
}

void PointsLog::Open(bool resume, std::map<int64_t, PointRecord>& done) {
  std::string kept;
  if (resume && ::access(path_.c_str(), F_OK) == 0) {
    for (const std::string& line : LogLines(path_)) {
      PointRecord rec = ParseRecord(line, fingerprint_, num_points_, row_width_, path_);
      if (done.emplace(rec.index, std::move(rec)).second) kept += line + "\n";
    }
  }
  WriteFileAtomic(path_, kept);
  fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd_ < 0) throw Error("cannot open '" + path_ + "': " + std::strerror(errno));
}

void PointsLog::Merge(const std::string& dir, std::map<int64_t, PointRecord>& done) {
  const std::string path = dir + "/" + kLogFile;
  if (::access(path.c_str(), F_OK) != 0) throw Error("--merge: no " + path);
  for (const std::string& line : LogLines(path)) {
    PointRecord rec = ParseRecord(line, fingerprint_, num_points_, row_width_, path);
    if (done.count(rec.index)) continue;
    Append(line);
    done.emplace(rec.index, std::move(rec));
  }
}

void PointsLog::Append(const std::string& record_text) {
  const std::string line = record_text + "\n";
  size_t written = 0;
  while (written < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error("cannot append to '" + path_ + "': " + std::strerror(errno));
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd_) != 0) throw Error("cannot sync '" + path_ + "': " + std::strerror(errno));
}

}  // namespace podsim::experiments::sweep
