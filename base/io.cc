#include "base/io.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"

namespace podsim {

void MakeDirectories(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error("cannot create directory '" + dir + "': " + ec.message());
}

void WriteFileAtomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error("cannot write '" + path + "': " + std::strerror(errno));
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error("failed writing '" + path + "': " + std::strerror(err));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw Error("failed writing '" + path + "': " + std::strerror(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw Error("cannot replace '" + path + "': " + std::strerror(err));
  }
}

void WriteJsonFile(const std::string& path, const nlohmann::json& json) {
  WriteFileAtomic(path, json.dump(2) + "\n");
}

namespace {
std::atomic<size_t> max_input_file_bytes{kMaxInputFileBytes};
}  // namespace

void SetMaxInputFileBytes(size_t bytes) { max_input_file_bytes = bytes; }
size_t MaxInputFileBytes() { return max_input_file_bytes; }

std::string ReadFile(const std::string& path, size_t max_bytes) {
  const bool input_limit = max_bytes == 0;
  if (input_limit) max_bytes = MaxInputFileBytes();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read '" + path + "'");
  std::string text;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof(buffer)) || in.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (text.size() > max_bytes) {
      throw Error("'" + path + "' holds more than " + std::to_string(max_bytes) +
                  " bytes, the most an input file may have" +
                  (input_limit ? " (podsim --max-file-size raises the limit)" : ""));
    }
  }
  if (in.bad()) throw Error("failed reading '" + path + "'");
  return text;
}

}  // namespace podsim
