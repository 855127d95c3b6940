#include "report/plot.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "base/error.h"
#include "base/io.h"

namespace podsim::report {

std::string PaletteLinetypes(double width) {
  std::string out;
  char line[96];
  for (size_t i = 0; i < kPalette.size(); ++i) {
    std::snprintf(line, sizeof line, "set linetype %zu lc rgb '%s' lw %g\n", i + 1, kPalette[i],
                  width);
    out += line;
  }
  return out;
}

bool RenderPlot(const std::string& dir, const std::string& name, const std::string& script,
                int width_px, int height_px) {
  WriteFileAtomic(dir + "/" + name + ".gp", script);
  const std::string size = std::to_string(width_px) + "," + std::to_string(height_px);
  const std::string terminals[][2] = {
      {"pngcairo size " + size + " font 'sans,10'", name + ".png"},
      {"svg size " + size + " dynamic font 'sans,10'", name + ".svg"}};
  for (const auto& [terminal, output] : terminals) {
    // gnuplot runs in DIR (the data paths inside the script are relative to it), with an argv:
    // no shell sees the directory or file names. Its output goes to DIR/NAME.log.
    // gnuplot writes NAME.png.tmp, renamed when it has finished: a killed run never leaves a
    // torn image under the final name.
    const std::string partial = output + ".tmp";
    const std::string setup = "set terminal " + terminal + "; set output '" + partial + "'";
    const std::string script_file = name + ".gp";
    const std::string log_file = dir + "/" + name + ".log";
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_file.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    // posix_spawn_file_actions_addchdir_np: glibc >= 2.29.
    posix_spawn_file_actions_addchdir_np(&actions, dir.c_str());
    std::vector<char*> argv = {const_cast<char*>("gnuplot"), const_cast<char*>("-e"),
                               const_cast<char*>(setup.c_str()),
                               const_cast<char*>(script_file.c_str()), nullptr};
    pid_t pid = 0;
    const int rc = posix_spawnp(&pid, "gnuplot", &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    int status = 0;
    if (rc == 0) {
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
    if (rc != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::string log;
      try {
        log = ReadFile(log_file);
      } catch (const Error&) {
      }
      std::cerr << "plot " << name << ": gnuplot failed (is gnuplot installed? setup.sh installs "
                << "gnuplot-nox)" << (log.empty() ? "\n" : ":\n" + log);
      std::remove(log_file.c_str());
      std::remove((dir + "/" + partial).c_str());
      return false;
    }
    std::remove(log_file.c_str());
    if (std::rename((dir + "/" + partial).c_str(), (dir + "/" + output).c_str()) != 0) {
      throw Error("cannot rename '" + dir + "/" + partial + "' to " + output);
    }
  }
  return true;
}

}  // namespace podsim::report
