#include "harness/launch/job.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <set>

#include <fmt/format.h>

#ifdef LOADBENCH_HAVE_MPI
#include <mpi.h>
#endif

namespace loadbench {

bool LaunchedByMpi() {
  for (const char* var :
       {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK", "MPI_LOCALNRANKS"}) {
    if (std::getenv(var) != nullptr) return true;
  }
  return false;
}

std::string MpiUnavailableReason() {
#ifdef LOADBENCH_HAVE_MPI
  return "";
#else
  return "this loadbench was built without MPI (libopenmpi-dev was not found when it was "
         "configured; scripts/setup.sh installs it, then rebuild)";
#endif
}

std::string HostName() {
  if (const char* name = std::getenv("LOADBENCH_HOST"); name != nullptr && *name != '\0') {
    return name;
  }
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

int Job::hosts() const {
  return static_cast<int>(std::set<int>(leaders_.begin(), leaders_.end()).size());
}

#ifdef LOADBENCH_HAVE_MPI

namespace {

// Byte counts and displacements of every rank's string, for the v-collectives.
std::vector<std::string> Split(const std::vector<char>& all, const std::vector<int>& counts) {
  std::vector<std::string> out;
  size_t at = 0;
  for (int n : counts) {
    out.emplace_back(all.data() + at, static_cast<size_t>(n));
    at += static_cast<size_t>(n);
  }
  return out;
}

std::vector<int> Displacements(const std::vector<int>& counts) {
  std::vector<int> d(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); ++i) d[i] = d[i - 1] + counts[i - 1];
  return d;
}

// Waits for a nonblocking collective without spinning: a rank waiting for the others must
// leave the CPU to the loads being measured (a blocking MPI call polls at full speed). Checks
// after 0.1 ms, then ever less often, at most every `max_pause_ns` (10 ms but at the start
// barrier). A long wait (the others' loads) so costs little: 0.7 to 0.9% of a core per waiting
// rank on a quiet machine here; checking every half millisecond it took 1.9% (measured beside
// a build), each check (MPI_Test: OpenMPI's progress engine) about 0.2 ms of CPU.
constexpr long kPatientPauseNs = 10000000, kPromptPauseNs = 250000;

void Wait(MPI_Request* request, long max_pause_ns = kPatientPauseNs) {
  int done = 0;
  MPI_Test(request, &done, MPI_STATUS_IGNORE);
  long pause_ns = 100000;
  while (!done) {
    const timespec pause = {0, pause_ns};
    ::nanosleep(&pause, nullptr);
    pause_ns = std::min(pause_ns * 2, max_pause_ns);
    MPI_Test(request, &done, MPI_STATUS_IGNORE);
  }
}

}  // namespace

Job::~Job() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (joined_ && !finalized) MPI_Finalize();
}

Status Job::Join() {
  if (MPI_Init(nullptr, nullptr) != MPI_SUCCESS) return Status::IOError("MPI_Init failed");
  joined_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  hosts_ = AllGather(HostName());
  leaders_.assign(static_cast<size_t>(size_), 0);
  for (int k = 0; k < size_; ++k) {
    int first = 0;
    while (hosts_[static_cast<size_t>(first)] != hosts_[static_cast<size_t>(k)]) ++first;
    leaders_[static_cast<size_t>(k)] = first;
  }
  return Status::Ok();
}

void Job::Barrier(bool prompt) const {
  MPI_Request r;
  MPI_Ibarrier(MPI_COMM_WORLD, &r);
  Wait(&r, prompt ? kPromptPauseNs : kPatientPauseNs);
}

std::string Job::Broadcast(const std::string& text) const {
  MPI_Request r;
  int n = static_cast<int>(text.size());
  MPI_Ibcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD, &r);
  Wait(&r);
  std::string out = rank_ == 0 ? text : std::string(static_cast<size_t>(n), '\0');
  MPI_Ibcast(out.data(), n, MPI_CHAR, 0, MPI_COMM_WORLD, &r);
  Wait(&r);
  return out;
}

std::vector<std::string> Job::AllGather(const std::string& mine) const {
  MPI_Request r;
  int n = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<size_t>(size_));
  MPI_Iallgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD, &r);
  Wait(&r);
  const std::vector<int> at = Displacements(counts);
  std::vector<char> all(static_cast<size_t>(at.back() + counts.back()));
  MPI_Iallgatherv(mine.data(), n, MPI_CHAR, all.data(), counts.data(), at.data(), MPI_CHAR,
                  MPI_COMM_WORLD, &r);
  Wait(&r);
  return Split(all, counts);
}

std::vector<std::string> Job::Gather(const std::string& mine) const {
  MPI_Request r;
  int n = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<size_t>(size_));
  MPI_Igather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD, &r);
  Wait(&r);
  if (rank_ != 0) {
    MPI_Igatherv(mine.data(), n, MPI_CHAR, nullptr, nullptr, nullptr, MPI_CHAR, 0, MPI_COMM_WORLD,
                 &r);
    Wait(&r);
    return {};
  }
  const std::vector<int> at = Displacements(counts);
  std::vector<char> all(static_cast<size_t>(at.back() + counts.back()));
  MPI_Igatherv(mine.data(), n, MPI_CHAR, all.data(), counts.data(), at.data(), MPI_CHAR, 0,
               MPI_COMM_WORLD, &r);
  Wait(&r);
  return Split(all, counts);
}

#else  // a build without MPI: a job of one, which Join refuses to make into more

Job::~Job() = default;

Status Job::Join() { return Status::Unsupported(MpiUnavailableReason()); }

void Job::Barrier(bool) const {}

std::string Job::Broadcast(const std::string& text) const { return text; }

std::vector<std::string> Job::AllGather(const std::string& mine) const { return {mine}; }

std::vector<std::string> Job::Gather(const std::string& mine) const { return {mine}; }

#endif

}  // namespace loadbench
