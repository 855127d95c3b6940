#pragma once
// Files on disk: every result podsim writes goes through WriteFileAtomic, so a reader (or a run
// killed half-way) sees either the old file or the whole new one, never a torn one.

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace podsim {

// Creates `dir` and its parents; throws Error naming the directory if it cannot.
void MakeDirectories(const std::string& dir);

// Writes `text` to a temporary file beside `path`, flushes it, and renames it over `path`.
// Throws Error naming the file on any failure (and leaves no temporary file behind).
void WriteFileAtomic(const std::string& path, const std::string& text);

// Pretty-printed with a 2-space indent and a trailing newline, keys in sorted order; atomic.
void WriteJsonFile(const std::string& path, const nlohmann::json& json);

// Input files (modules, argument files) are at most this large by default; podsim's
// --max-file-size sets the process-wide limit (SetMaxInputFileBytes).
inline constexpr size_t kMaxInputFileBytes = size_t{1} << 30;
void SetMaxInputFileBytes(size_t bytes);
size_t MaxInputFileBytes();

// The whole content of a file; throws Error naming the file if it cannot be read or holds more
// than `max_bytes` (0: MaxInputFileBytes()). Read in chunks: a device such as /dev/zero is
// refused, not exhausted.
std::string ReadFile(const std::string& path, size_t max_bytes = 0);

}  // namespace podsim
