// The read recipes: every byte of a set of files read by each, in threads that each take a
// contiguous share, cold, timed from the first request to the last byte.
#include "harness/probe/read_recipes.h"

#include <fcntl.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "harness/probe/probe_measure.h"
#include "harness/process/interrupt.h"
#include "loaders/base/file_io.h"
#include "loaders/base/io_ring.h"
#include "loaders/base/units.h"
#include "loaders/blocks/ring_reads.h"

namespace loadbench::probe {
namespace {

using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

constexpr const char* kInterrupted = "interrupted";

// Bytes [begin, end) of file `file`: a run of one job's blocks.
struct Piece {
  size_t file;
  uint64_t begin, end;
};

// The blocks of every file (`block` bytes from each file's start, the last one short), file
// after file, split into `jobs` runs of consecutive blocks as even as whole blocks allow; each
// job's run as pieces, one per file it reaches into.
std::vector<std::vector<Piece>> Shares(const std::vector<uint64_t>& sizes, uint64_t block,
                                       unsigned jobs) {
  uint64_t blocks = 0;
  for (uint64_t s : sizes) blocks += (s + block - 1) / block;
  std::vector<std::vector<Piece>> shares(jobs);
  uint64_t index = 0;
  for (size_t f = 0; f < sizes.size(); ++f) {
    for (uint64_t off = 0; off < sizes[f]; off += block, ++index) {
      std::vector<Piece>& mine = shares[index * jobs / blocks];
      const uint64_t end = std::min(sizes[f], off + block);
      if (!mine.empty() && mine.back().file == f && mine.back().end == off) {
        mine.back().end = end;
      } else {
        mine.push_back({f, off, end});
      }
    }
  }
  return shares;
}

// What one job reads with: its pieces, its files (by index into the paths; -1 where it reads
// none of that file), its buffer faulted in (`base`: where in `buf` it starts), and for
// O_DIRECT its ring; the bytes it has read, and when it stops asking for more.
struct Job {
  std::vector<Piece> pieces;
  std::vector<int> fds;
  std::vector<UniqueFd> own;  // the fds this job opened (buffered: one open file per job)
  Mapping buf;
  std::byte* base = nullptr;
  IoRing ring;
  uint64_t done = 0;
  unsigned char touched = 0;  // what a mapped read's touches read, kept so none is dropped
  std::optional<Clock::time_point> stop;
  Status result;
  bool Stopped() const { return stop && Clock::now() >= *stop; }
};

constexpr uint64_t kHugePage = uint64_t{2} << 20;

// `len` bytes of anonymous memory at *base, faulted in now (not in the timed region); with
// `huge`, 2 MiB aligned and advised MADV_HUGEPAGE, so that the kernel backs it with huge pages
// where it can.
Status MapBuffer(uint64_t len, bool huge, Mapping* out, std::byte** base) {
  const uint64_t map_len = huge ? len + kHugePage : len;
  void* p = ::mmap(nullptr, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return Status::FromErrno(fmt::format("mmap of {} bytes", map_len), errno);
  *out = Mapping(p, map_len);
  const auto at = reinterpret_cast<uintptr_t>(p);
  *base = out->mutable_data() + (huge ? (kHugePage - at % kHugePage) % kHugePage : 0);
  // Advice only: without THP (enabled "never") the buffer stays on 4 KiB pages.
  if (huge) (void)::madvise(*base, len, MADV_HUGEPAGE);
  std::memset(*base, 0, len);
  return Status::Ok();
}

uint64_t RoundUp(uint64_t n, uint64_t to) { return (n + to - 1) / to * to; }

// One job's O_DIRECT reads, by the ring read loop (loaders/blocks/ring_reads.h): its pieces
// in blocks, queue_depth of them in flight in its ring, slot i reading into buf + i * block.
// A file's last block is asked for rounded up to the alignment and reads short, to the file's
// end. After an error or an interrupt nothing more is queued, but every request in flight is
// still reaped.
Status DirectJob(const ReadRecipe& rc, const std::vector<std::string>& paths, uint64_t align,
                 const BlockSink& sink, Job* job) {
  std::vector<size_t> files(rc.queue_depth);  // by slot: the file its read is of
  size_t piece = 0;
  uint64_t next = job->pieces.empty() ? 0 : job->pieces[0].begin;
  const RingSource blocks = [&](size_t slot, RingRead* read) {
    if (Interrupted() || job->Stopped()) return false;
    while (piece < job->pieces.size() && next >= job->pieces[piece].end) {
      if (++piece < job->pieces.size()) next = job->pieces[piece].begin;
    }
    if (piece == job->pieces.size()) return false;
    const Piece& p = job->pieces[piece];
    const uint64_t len = std::min(rc.block_bytes, p.end - next);
    files[slot] = p.file;
    *read = {.fd = job->fds[p.file],
             .offset = next,
             .dst = job->base + slot * rc.block_bytes,
             .len = RoundUp(len, align),
             .need = len,
             .path = paths[p.file]};
    next += len;
    return true;
  };
  const RingArrived seen = [&](size_t slot, const RingRead& read, uint64_t) {
    job->done += read.need;
    if (sink) sink(files[slot], read.offset, read.dst, read.need);
    return Status::Ok();
  };
  LB_RETURN_IF_ERROR(ReadRequests(
      job->ring.get(), {.slots = rc.queue_depth, .align = align, .name = rc.name}, blocks, seen));
  return Interrupted() ? Status::Failed(kInterrupted) : Status::Ok();
}

// posix_fadvise of [offset, offset + len) of `fd`, its error naming the file.
Status Advise(int fd, const std::string& path, uint64_t offset, uint64_t len, int advice) {
  const int err = ::posix_fadvise(fd, static_cast<off_t>(offset), static_cast<off_t>(len), advice);
  return err == 0 ? Status::Ok() : Status::FromErrno(fmt::format("{}: posix_fadvise", path), err);
}

// One piece read through a mapping, as a mapping's reader does: MADV_SEQUENTIAL over it, then
// one byte of every page touched front to back, a block at a time, so that the page cache's
// read-ahead for faults sends the requests (on a device that merges them, larger ones than
// read() gets: docs/probe.md).
Status MappedPiece(const ReadRecipe& rc, const Piece& p, int fd, const std::string& path,
                   const BlockSink& sink, Job* job) {
  const uint64_t page = 4096, from = p.begin / page * page, len = p.end - from;
  void* map = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(from));
  if (map == MAP_FAILED) return Status::FromErrno(fmt::format("{}: mmap", path), errno);
  const auto* base = static_cast<const std::byte*>(map);
  ::madvise(map, len, MADV_SEQUENTIAL);
  Status s;
  for (uint64_t off = p.begin; off < p.end && s.ok();) {
    if (Interrupted()) s = Status::Failed(kInterrupted);
    if (!s.ok() || job->Stopped()) break;
    const size_t n = std::min(rc.block_bytes, p.end - off);
    unsigned char sum = 0;
    for (uint64_t at = off - from; at < off - from + n; at += page) {
      sum ^= static_cast<unsigned char>(*static_cast<const volatile std::byte*>(base + at));
    }
    job->touched ^= sum;
    job->done += n;
    if (sink) sink(p.file, off, base + (off - from), n);
    off += n;
  }
  ::munmap(map, len);
  return s;
}

// One job's buffered reads: each piece read front to back in blocks with pread() on the job's
// own open file, after POSIX_FADV_SEQUENTIAL over the piece (the kernel's read-ahead doubled),
// or asking POSIX_FADV_WILLNEED for the bytes up to ahead_bytes past each read, or with no
// advice ("normal").
Status BufferedJob(const ReadRecipe& rc, const std::vector<std::string>& paths,
                   const BlockSink& sink, Job* job) {
  const bool willneed = std::strcmp(rc.advice, "willneed") == 0;
  const bool sequential = std::strcmp(rc.advice, "sequential") == 0;
  for (const Piece& p : job->pieces) {
    const int fd = job->fds[p.file];
    const std::string& path = paths[p.file];
    if (std::strcmp(rc.advice, "mapped") == 0) {
      LB_RETURN_IF_ERROR(MappedPiece(rc, p, fd, path, sink, job));
      continue;
    }
    if (sequential) {
      LB_RETURN_IF_ERROR(Advise(fd, path, p.begin, p.end - p.begin, POSIX_FADV_SEQUENTIAL));
    }
    uint64_t asked = p.begin;  // WILLNEED given up to here
    for (uint64_t off = p.begin; off < p.end;) {
      if (Interrupted()) return Status::Failed(kInterrupted);
      if (job->Stopped()) return Status::Ok();
      if (const uint64_t want = std::min(p.end, off + rc.ahead_bytes); willneed && want > asked) {
        LB_RETURN_IF_ERROR(Advise(fd, path, asked, want - asked, POSIX_FADV_WILLNEED));
        asked = want;
      }
      const size_t len = std::min(rc.block_bytes, p.end - off);
      LB_RETURN_IF_ERROR(PreadExact(fd, path, job->base, len, off));
      job->done += len;
      if (sink) sink(p.file, off, job->base, len);
      off += len;
    }
  }
  return Status::Ok();
}

// Opens the files and sizes them: O_DIRECT ones shared by every job (*shared), else none
// here. *align: the largest O_DIRECT alignment of the files.
Status OpenFiles(const ReadRecipe& rc, const std::vector<std::string>& paths,
                 std::vector<UniqueFd>* shared, std::vector<uint64_t>* sizes, uint64_t* align) {
  *align = 1;
  for (const std::string& path : paths) {
    UniqueFd fd;
    LB_RETURN_IF_ERROR(OpenReadOnly(path, rc.direct ? O_DIRECT : 0, &fd));
    uint64_t size = 0;
    LB_RETURN_IF_ERROR(FileSize(fd.get(), path, &size));
    sizes->push_back(size);
    if (rc.direct) {
      *align = std::max(*align, DirectIoAlignment(fd.get()));
      shared->push_back(std::move(fd));
    }
  }
  if (rc.direct && rc.block_bytes % *align != 0) {
    return Status::Unsupported(fmt::format("O_DIRECT here needs {}-byte alignment, which {} "
                                           "blocks do not meet",
                                           *align, FormatBytes(rc.block_bytes)));
  }
  return Status::Ok();
}

// Everything a job needs before the clock starts: its files open, its buffer, its ring.
Status PrepareJob(const ReadRecipe& rc, const std::vector<std::string>& paths,
                  const std::vector<UniqueFd>& shared, Job* job) {
  job->fds.assign(paths.size(), -1);
  for (const Piece& p : job->pieces) {
    if (job->fds[p.file] >= 0) continue;
    if (rc.direct) {
      job->fds[p.file] = shared[p.file].get();
    } else {
      LB_RETURN_IF_ERROR(OpenReadOnly(paths[p.file], 0, &job->own.emplace_back()));
      job->fds[p.file] = job->own.back().get();
    }
  }
  LB_RETURN_IF_ERROR(MapBuffer(rc.queue_depth * rc.block_bytes, rc.direct && rc.huge_pages,
                               &job->buf, &job->base));
  if (rc.direct) {
    if (const int ret = job->ring.Init(rc.queue_depth); ret < 0) {
      return Status::Unsupported(RingSetupFailure(-ret));
    }
  }
  return Status::Ok();
}

}  // namespace

const ReadRecipe* FindRecipe(std::string_view name) {
  for (const ReadRecipe& r : kReadRecipes) {
    if (name == r.name) return &r;
  }
  return nullptr;
}

Json RecipeParams(const ReadRecipe& r) {
  return {{"recipe", r.name},
          {"direct", r.direct ? "on" : "off"},
          {"block_bytes", r.block_bytes},
          {"queue_depth", r.queue_depth},
          {"jobs", r.jobs},
          {"advice", r.advice},
          {"ahead_bytes", r.ahead_bytes},
          {"huge_pages", r.huge_pages ? "on" : "off"}};
}

Status ReadWithRecipe(const ReadRecipe& rc, const std::vector<std::string>& paths, uint64_t* bytes,
                      double* seconds, const BlockSink& sink, double max_seconds) {
  std::vector<UniqueFd> shared;
  std::vector<uint64_t> sizes;
  uint64_t align = 1;
  LB_RETURN_IF_ERROR(OpenFiles(rc, paths, &shared, &sizes, &align));
  *bytes = 0;
  std::vector<std::unique_ptr<Job>> jobs;
  for (std::vector<Piece>& share : Shares(sizes, rc.block_bytes, rc.jobs)) {
    if (share.empty()) continue;  // fewer blocks than jobs
    jobs.push_back(std::make_unique<Job>());
    jobs.back()->pieces = std::move(share);
    LB_RETURN_IF_ERROR(PrepareJob(rc, paths, shared, jobs.back().get()));
  }
  auto run = [&](Job* job) {
    job->result =
        rc.direct ? DirectJob(rc, paths, align, sink, job) : BufferedJob(rc, paths, sink, job);
  };
  Status started;
  const auto t0 = Clock::now();
  if (max_seconds > 0) {
    const auto stop = t0 + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(max_seconds));
    for (const auto& job : jobs) job->stop = stop;
  }
  {
    std::vector<std::jthread> threads;
    for (size_t j = 1; j < jobs.size() && started.ok(); ++j) {
      try {
        threads.emplace_back(run, jobs[j].get());
      } catch (const std::system_error& e) {
        started = Status::IOError(fmt::format("cannot start a reading thread: {}", e.what()));
      }
    }
    if (!jobs.empty() && started.ok()) run(jobs[0].get());
  }  // every thread joined here
  *seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  LB_RETURN_IF_ERROR(started);
  for (const auto& job : jobs) {
    LB_RETURN_IF_ERROR(job->result);
    *bytes += job->done;
  }
  return Status::Ok();
}

Json ColdRecipeRead(const ReadRecipe& rc, const std::vector<std::string>& paths, int reps) {
  uint64_t total = 0;
  for (const std::string& path : paths) {
    UniqueFd fd;
    uint64_t size = 0;
    Status s = OpenReadOnly(path, 0, &fd);
    if (s.ok()) s = FileSize(fd.get(), path, &size);
    if (!s.ok()) return Unmeasured({{"gb_per_s", nullptr}, {"recipe", rc.name}}, s.message());
    total += size;
  }
  if (total == 0)
    return Unmeasured({{"gb_per_s", nullptr}, {"recipe", rc.name}}, "no bytes to read");
  Json j = BandwidthRecord(
      total, reps,
      fmt::format("{}; every file's cache dropped and checked <= 1% resident before each",
                  rc.direct ? fmt::format("io_uring reads with O_DIRECT, {} requests of {} in "
                                          "flight per job, {} jobs{}",
                                          rc.queue_depth, FormatBytes(rc.block_bytes), rc.jobs,
                                          rc.huge_pages ? ", into huge-page buffers" : "")
                  : std::strcmp(rc.advice, "mapped") == 0
                      ? fmt::format("a mapping with MADV_SEQUENTIAL, a byte of every page touched, "
                                    "{} jobs",
                                    rc.jobs)
                      : fmt::format("pread() of {} through the page cache, advice {}, {} jobs",
                                    FormatBytes(rc.block_bytes), rc.advice, rc.jobs)));
  j["recipe"] = rc.name;
  j["params"] = RecipeParams(rc);
  Json checks = Json::array();
  bool unsupported = false;
  j = Bandwidth(
      std::move(j), total, reps,
      [&] {
        for (const std::string& path : paths) {
          if (std::string why = DropAndCheck(path, &checks); !why.empty()) return why;
        }
        return std::string();
      },
      [&](double* seconds) {
        uint64_t read = 0;
        Status s = ReadWithRecipe(rc, paths, &read, seconds);
        unsupported = s.code() == Status::Code::kUnsupported;
        if (s.ok() && read != total) {
          s = Status::IOError(fmt::format("read {} bytes, expected {}", read, total));
        }
        return s;
      });
  j["cold_checks"] = checks;
  if (unsupported) j["unsupported"] = true;
  return j;
}

Json DeviceLimit(const std::vector<std::string>& paths, int reps) {
  Json out = {{"gb_per_s", nullptr},
              {"recipe", nullptr},
              {"params", nullptr},
              {"chosen", fmt::format("the fastest recipe, each the best of {}", reps)},
              {"recipes", Json::object()}};
  for (const ReadRecipe& rc : kReadRecipes) {
    if (Interrupted()) break;
    Json m = ColdRecipeRead(rc, paths, reps);
    const Json& g = m["gb_per_s"];
    if (g.is_number() && (out["gb_per_s"].is_null() || g > out["gb_per_s"])) {
      out["gb_per_s"] = g;
      out["recipe"] = rc.name;
      out["params"] = RecipeParams(rc);
    }
    out["recipes"][rc.name] = std::move(m);
  }
  if (out["gb_per_s"].is_null()) return Unmeasured(std::move(out), "no recipe gave a figure");
  return out;
}

}  // namespace loadbench::probe
