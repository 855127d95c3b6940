#pragma once
// Terminal progress of a long run, quiet when stderr is not a terminal.

#include <cstdint>
#include <string>

namespace podsim::report {

// A one-line progress counter on stderr, only when stderr is a terminal:
//   "sweep: 12/32  0:42 elapsed, ETA 1:10  running model.experts=512 topology=tpu-v3-512"
// The ETA is the mean time of the points done in this process times the points left.
class Progress {
 public:
  // `already`: points done before this process started (a resumed run); they count as done but
  // not in the ETA.
  Progress(std::string label, int64_t total, int64_t already = 0);
  ~Progress();
  // The point now running.
  void Start(const std::string& what);
  // A point done (`what`: its name, shown until the next Start).
  void Step(const std::string& what);
  // A line for the user (a point that failed, say) on stderr, whether or not it is a terminal;
  // on a terminal the progress line is redrawn below it.
  void Note(const std::string& line) const;

 private:
  void Show(const std::string& what) const;
  std::string label_;
  int64_t total_;
  int64_t done_ = 0;
  int64_t done_here_ = 0;
  double start_s_;
  bool enabled_;
  mutable bool shown_ = false;
};

}  // namespace podsim::report
