#include "report/progress.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

namespace podsim::report {

namespace {

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string Clock(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  }
  return buf;
}

}  // namespace

Progress::Progress(std::string label, int64_t total, int64_t already)
    : label_(std::move(label)),
      total_(total),
      done_(already),
      start_s_(NowSeconds()),
      enabled_(isatty(STDERR_FILENO) != 0) {}

Progress::~Progress() {
  if (shown_) std::cerr << "\n";
}

void Progress::Start(const std::string& what) { Show("running " + what); }

void Progress::Step(const std::string& what) {
  ++done_;
  ++done_here_;
  Show(what);
}

void Progress::Note(const std::string& line) const {
  if (enabled_) std::cerr << "\r\033[K";
  std::cerr << line << "\n";
}

void Progress::Show(const std::string& what) const {
  if (!enabled_) return;
  shown_ = true;
  const double elapsed = NowSeconds() - start_s_;
  std::string eta;
  if (done_here_ > 0 && done_ < total_) {
    eta = ", ETA " +
          Clock(elapsed / static_cast<double>(done_here_) * static_cast<double>(total_ - done_));
  }
  std::cerr << "\r\033[K" << label_ << ": " << done_ << "/" << total_ << "  " << Clock(elapsed)
            << " elapsed" << eta << "  " << what << std::flush;
}

}  // namespace podsim::report
