#pragma once
// Points of a sweep spread over MPI ranks (`mpirun -np N podsim run SWEEP --out DIR`), through
// OpenMPI's C API. MPI starts only when the process was launched by mpirun (OpenMPI's or a PMI
// launcher's environment); otherwise Rank() is 0, Size() 1 and everything runs in-process.
//
// Dynamic load balancing (points can differ 100x in cost): rank 0 hands out one point index at
// a time to whichever rank asks, and runs points itself on a second thread while its main thread
// answers (only the main thread calls MPI: MPI_THREAD_FUNNELED). A rank sends each finished
// point's record back with its next request. Rank 0 alone writes the output directory; the
// records are keyed by point index, so the results do not depend on which rank ran what.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace podsim::experiments::dist {

// Starts MPI if the process was launched by mpirun. Call once, first thing in main.
void InitIfLaunched(int* argc, char*** argv);
// Ends MPI if it was started (idempotent); main calls it before returning.
void Finalize();
// Ends every rank with `code` (MPI_Abort): a rank that failed must not leave the others waiting.
[[noreturn]] void Abort(int code);
int Rank();
int Size();

// Runs point k and returns its record (a string the caller decodes). Must not throw.
using PointFn = std::function<std::string(int64_t)>;
// Called on rank 0 with each finished point's record, one call at a time, in completion order.
using StoreFn = std::function<void(int64_t, const std::string&)>;

// Rank 0: runs every index of `todo` over all ranks (this one on a worker thread), storing each
// record as it arrives; returns when all are stored and every other rank has been told to stop.
// Without MPI: runs `todo` in order on this thread.
void Coordinate(const std::vector<int64_t>& todo, const PointFn& run, const StoreFn& store);
// Ranks > 0: asks rank 0 for indices until told to stop, running each with `run`.
void Work(const PointFn& run);

}  // namespace podsim::experiments::dist
