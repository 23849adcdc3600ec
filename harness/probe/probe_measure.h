// The probe's measurements, one function each (harness/probe/probe.h puts them together). Each
// returns one JSON object: its figure under a key that names the unit ("gb_per_s",
// "us_per_fault"), with what was done (bytes, block size, repetitions, how the figure was
// chosen); or that key null and a "reason". Never a guessed number. A measurement stopped by
// SIGINT/SIGTERM (Interrupted()) returns null with the reason "interrupted".
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "loaders/base/file_io.h"
#include "loaders/base/status.h"

namespace loadbench::probe {

inline constexpr uint64_t kBlockBytes = uint64_t{1} << 20;  // every read and write request

// Shared by the measurements (here and harness/probe/read_recipes.cc).
// `j` with its "reason" set to `why` ("interrupted" once interrupted): every figure of `j` was
// set to null when it was made, and is set only on success.
nlohmann::ordered_json Unmeasured(nlohmann::ordered_json j, const std::string& why);
// Empty when `path` is <= 1% resident after a drop, else why not. Appends the check to `checks`.
std::string DropAndCheck(const std::string& path, nlohmann::ordered_json* checks);
// `reps` timed repetitions, each after `prepare` ("" when its state was reached, else why
// not), into `j` (a BandwidthRecord): the figure gb_per_s is the best rate, since a ceiling is
// what the machine can do and a slower repetition is something else getting in the way; the
// median and every repetition beside it. One failure voids the figure.
nlohmann::ordered_json Bandwidth(nlohmann::ordered_json j, uint64_t bytes, int reps,
                                 const std::function<std::string()>& prepare,
                                 const std::function<Status(double*)>& timed);
// A bandwidth measurement's record before it runs: its figures null, `bytes`, `reps`, `method`.
nlohmann::ordered_json BandwidthRecord(uint64_t bytes, int reps, const std::string& method);

// Device side, on the scratch file at `path` (open as `fd`), `bytes` long, a multiple of
// kBlockBytes.
// Writes the file in kBlockBytes blocks of varied non-zero bytes, fsync in the timed region.
nlohmann::ordered_json SequentialWrite(int fd, const std::string& path, uint64_t bytes);
// Cold: read() of kBlockBytes at a time through the page cache; same cold check.
nlohmann::ordered_json ColdBufferedRead(const std::string& path, uint64_t bytes, int reps);
// Warm: WarmFile, checked >= 99% resident, then read() of kBlockBytes at a time.
nlohmann::ordered_json WarmRead(const std::string& path, uint64_t bytes, int reps);
// Read faults on a MAP_PRIVATE, PROT_READ mapping of the file, cached (checked >= 99%
// resident, warmed first), one byte touched per 4 KiB page.
nlohmann::ordered_json FileMinorFault(const std::string& path, uint64_t bytes, int reps);

// Whether a virtio-balloon device reports free guest pages to the host (free page
// reporting: the host takes them back, and the guest's next first touch of them pays a host
// fault); false without such a device, nullopt when /sys/bus/virtio cannot be read.
std::optional<bool> FreePageReporting();

// One timed repetition of a fault measurement: its seconds, the faults the kernel counted in
// it, and for THP the AnonHugePages it gained (nullopt for a measurement of base pages).
struct FaultRep {
  double seconds = 0;
  long minor = 0;
  long major = 0;
  std::optional<uint64_t> huge_bytes;
};

// The figures of a fault measurement's repetitions (in the order they ran) into `j`:
// reps_us_per_fault, every one's microseconds per fault (null where it counted none); for THP
// reps_huge_page, whether each got a huge page (AnonHugePages grew), reps_in_median and
// reps_left_out. A THP repetition that got no huge page is no 2 MiB first touch: it is left
// out, and the others are kept. Of those kept: the repetition of median time (of an even
// count, the slower of the middle two) gives us_per_fault, median_us (the same) and faults;
// spread_us is [least, most] of their microseconds per fault and best_us_per_fault the least.
// Returns the median repetition, or nullopt (its figures left as they were) when none was kept.
std::optional<FaultRep> RecordFaultReps(const std::vector<FaultRep>& reps,
                                        nlohmann::ordered_json* j);

// Memory side.
// memcpy between two pre-faulted anonymous buffers of `bytes` each.
nlohmann::ordered_json MemcpyBandwidth(uint64_t bytes, int reps);
// memset over an anonymous buffer of `bytes` faulted in beforehand: what filling memory costs
// once no fault is left in it. gb_per_s is the median repetition's rate (bytes written per
// second), beside best_gb_per_s and spread_gb_per_s ([least, most]).
nlohmann::ordered_json MemoryFill(uint64_t bytes, int reps);
// cudaMemcpy of `bytes` into GPU memory from pinned (cudaHostAlloc) or pageable (pre-faulted)
// host memory; null with the reason where no GPU can be used.
nlohmann::ordered_json HostToDevice(bool pinned, uint64_t bytes, int reps);
// First-touch write faults on fresh anonymous memory with MADV_NOHUGEPAGE.
nlohmann::ordered_json AnonFault4k(uint64_t bytes, int reps);
// First-touch write faults on fresh huge-page-aligned anonymous memory with MADV_HUGEPAGE,
// with the AnonHugePages the kernel granted.
nlohmann::ordered_json ThpFault(uint64_t bytes, int reps);

// Who populated fresh anonymous memory before its first user access.
enum class FirstTouchBy { kUserWrite, kMapPopulate, kPopulateWrite, kRead, kDirectRead };
const char* FirstTouchName(FirstTouchBy how);
// The first user access (one byte written per 4 KiB page) to `bytes` of fresh anonymous memory
// populated `how` (kRead: from the file at `path`, warmed and checked >= 99% resident first;
// kDirectRead: from it with O_DIRECT), against a second pass over it; seconds per GiB of the
// population, the first pass (first_s_per_gib, the figure) and the second, and the faults the
// kernel counted in the population and the first pass. `bytes`: a multiple of 1 MiB, at most
// the file's size for the two reads.
nlohmann::ordered_json FirstTouch(FirstTouchBy how, const std::string& path, uint64_t bytes,
                                  int reps);

}  // namespace loadbench::probe
