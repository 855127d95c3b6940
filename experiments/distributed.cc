#include "experiments/distributed.h"

#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "base/error.h"

namespace podsim::experiments::dist {

namespace {

bool g_started = false;
int g_rank = 0;
int g_size = 1;

constexpr int kTagRequest = 1;  // worker -> 0: a finished record (empty: the first request)
constexpr int kTagWork = 2;     // 0 -> worker: an index, or -1: stop

void Check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw Error(std::string("MPI: ") + what + " failed");
}

// The record a worker sends back: 8 bytes of index, then the record text.
std::string Pack(int64_t index, const std::string& record) {
  std::string msg(sizeof index, '\0');
  std::memcpy(msg.data(), &index, sizeof index);
  return msg + record;
}

}  // namespace

void InitIfLaunched(int* argc, char*** argv) {
  const bool launched = std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr ||
                        std::getenv("PMI_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
  if (!launched || g_started) return;
  int provided = 0;
  Check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  g_started = true;
  if (provided < MPI_THREAD_FUNNELED) {
    throw Error(
        "MPI: this MPI library cannot run a worker thread beside MPI calls "
        "(MPI_THREAD_FUNNELED not provided)");
  }
  Check(MPI_Comm_rank(MPI_COMM_WORLD, &g_rank), "MPI_Comm_rank");
  Check(MPI_Comm_size(MPI_COMM_WORLD, &g_size), "MPI_Comm_size");
}

void Finalize() {
  if (!g_started) return;
  g_started = false;
  MPI_Finalize();
}

void Abort(int code) {
  if (g_started) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

int Rank() { return g_rank; }
int Size() { return g_size; }

void Coordinate(const std::vector<int64_t>& todo, const PointFn& run, const StoreFn& store) {
  if (g_size == 1) {
    for (int64_t k : todo) store(k, run(k));
    return;
  }
  std::mutex mu;  // guards next and store
  size_t next = 0;
  auto take = [&]() -> int64_t {
    std::lock_guard<std::mutex> lock(mu);
    return next < todo.size() ? todo[next++] : -1;
  };
  std::exception_ptr local_error;
  std::thread local([&] {
    try {
      for (int64_t k = take(); k >= 0; k = take()) {
        const std::string record = run(k);
        std::lock_guard<std::mutex> lock(mu);
        store(k, record);
      }
    } catch (...) {
      local_error = std::current_exception();
    }
  });
  try {
    int working = g_size - 1;
    std::string buffer;
    while (working > 0) {
      // Poll, sleeping between polls: a blocking MPI_Probe spins (OpenMPI busy-waits), taking a
      // core from this rank's own worker thread and from the other ranks.
      MPI_Status status;
      int arrived = 0;
      for (;;) {
        Check(MPI_Iprobe(MPI_ANY_SOURCE, kTagRequest, MPI_COMM_WORLD, &arrived, &status),
              "MPI_Iprobe");
        if (arrived) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      int bytes = 0;
      Check(MPI_Get_count(&status, MPI_CHAR, &bytes), "MPI_Get_count");
      buffer.resize(static_cast<size_t>(bytes));
      Check(MPI_Recv(buffer.data(), bytes, MPI_CHAR, status.MPI_SOURCE, kTagRequest, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE),
            "MPI_Recv");
      if (buffer.size() >= sizeof(int64_t)) {
        int64_t index = 0;
        std::memcpy(&index, buffer.data(), sizeof index);
        std::lock_guard<std::mutex> lock(mu);
        store(index, buffer.substr(sizeof index));
      }
      const int64_t k = take();
      Check(MPI_Send(&k, 1, MPI_INT64_T, status.MPI_SOURCE, kTagWork, MPI_COMM_WORLD), "MPI_Send");
      if (k < 0) --working;
    }
  } catch (...) {
    // No more points for this rank's thread, which must be joined before the error leaves (the
    // caller then aborts the other ranks).
    {
      std::lock_guard<std::mutex> lock(mu);
      next = todo.size();
    }
    local.join();
    throw;
  }
  local.join();
  if (local_error) std::rethrow_exception(local_error);
}

void Work(const PointFn& run) {
  std::string msg;  // empty: the first request
  for (;;) {
    Check(MPI_Send(msg.data(), static_cast<int>(msg.size()), MPI_CHAR, 0, kTagRequest,
                   MPI_COMM_WORLD),
          "MPI_Send");
    int64_t k = -1;
    Check(MPI_Recv(&k, 1, MPI_INT64_T, 0, kTagWork, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
    if (k < 0) return;
    msg = Pack(k, run(k));
  }
}

}  // namespace podsim::experiments::dist
