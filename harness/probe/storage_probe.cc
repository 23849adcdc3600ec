// A storage's own probe: the read recipes and a sweep of O_DIRECT request sizes and depths over
// a model's files where they sit, each cold and bounded in time, with the device's own count of
// the requests it served.
#include "harness/probe/storage_probe.h"

#include <fcntl.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "harness/probe/probe_measure.h"
#include "harness/probe/read_recipes.h"
#include "harness/process/interrupt.h"
#include "loaders/base/file_io.h"
#include "loaders/base/io_ring.h"
#include "loaders/base/units.h"
#include "loaders/blocks/ring_reads.h"

namespace loadbench::probe {
namespace {

using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = kKiB * kKiB;
constexpr const char* kInterrupted = "interrupted";
// The probe's cold buffered read as a recipe: read() of 1 MiB, one stream, no advice: what a
// plain reader gets from the default read-ahead.
constexpr ReadRecipe kBufferedRead = {"buffered_1m", false, kMiB, 1, 1, "normal", 0, false};

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Drops every file's cache and checks it cold: "" when it is, else why not; *checks gets the
// last try's checks, and *tries how many it took. A read bounded in time leaves read-ahead in
// flight, and on a throttled device it can take seconds to arrive: its pages cannot be dropped
// before, so a file that is not cold is dropped again, every kColdWait, up to kColdTries times.
constexpr int kColdTries = 20;
constexpr auto kColdWait = std::chrono::milliseconds(250);

std::string MakeCold(const std::vector<std::string>& paths, Json* checks, int* tries) {
  for (*tries = 1;; ++*tries) {
    *checks = Json::array();
    std::string why;
    for (const std::string& path : paths) {
      if (why = DropAndCheck(path, checks); !why.empty()) break;
    }
    if (why.empty() || why.find("not cold") == std::string::npos || *tries == kColdTries ||
        Interrupted()) {
      return why;
    }
    std::this_thread::sleep_for(kColdWait);
  }
}

// The device's requests since `before`, into `j`: device_reads, device_bytes and their
// average, device_request_bytes (null when it served none).
void AddDeviceFigures(const std::string& device, const std::optional<DeviceReads>& before,
                      Json* j) {
  if (device.empty()) return;
  const std::optional<DeviceReads> after = ReadDeviceReads(device);
  if (!before || !after || after->reads < before->reads) {
    (*j)["device_reads"] = nullptr;
    (*j)["device_request_bytes"] = nullptr;
    return;
  }
  const uint64_t reads = after->reads - before->reads;
  const uint64_t bytes = (after->sectors - before->sectors) * 512;
  (*j)["device_reads"] = reads;
  (*j)["device_bytes"] = bytes;
  (*j)["device_request_bytes"] = reads == 0 ? Json() : Json(bytes / reads);
}

// One cold figure into `j` (its figures null): the files made cold, then `read`, which gives
// the bytes that arrived and its seconds, with the device's requests counted around it.
Json ColdFigure(Json j, const std::vector<std::string>& paths, const std::string& device,
                const std::function<Status(uint64_t*, double*)>& read) {
  Json checks = Json::array();
  int tries = 0;
  const std::string why = MakeCold(paths, &checks, &tries);
  j["cold_checks"] = checks;
  if (tries > 1) j["cold_tries"] = tries;
  if (!why.empty()) return Unmeasured(std::move(j), why);
  const std::optional<DeviceReads> before = device.empty() ? std::nullopt : ReadDeviceReads(device);
  uint64_t bytes = 0;
  double seconds = 0;
  if (Status s = read(&bytes, &seconds); !s.ok()) {
    if (s.code() == Status::Code::kUnsupported) j["unsupported"] = true;
    return Unmeasured(std::move(j), s.message());
  }
  if (bytes == 0 || seconds <= 0) return Unmeasured(std::move(j), "nothing was read");
  j["bytes"] = bytes;
  j["seconds"] = seconds;
  j["gb_per_s"] = static_cast<double>(bytes) / seconds / 1e9;
  AddDeviceFigures(device, before, &j);
  return j;
}

// A read recipe's cold read of the files, for at most `seconds`.
Json RecipeFigure(const ReadRecipe& rc, const std::vector<std::string>& paths,
                  const std::string& device, double seconds, uint64_t total) {
  Json j = {{"gb_per_s", nullptr}, {"recipe", rc.name},  {"params", RecipeParams(rc)},
            {"bytes", nullptr},    {"seconds", nullptr}, {"capped", nullptr}};
  j = ColdFigure(std::move(j), paths, device, [&](uint64_t* bytes, double* s) {
    return ReadWithRecipe(rc, paths, bytes, s, nullptr, seconds);
  });
  if (j["bytes"].is_number()) j["capped"] = j["bytes"].get<uint64_t>() < total;
  return j;
}

// The files opened with O_DIRECT for reads of whole `block`s: their fds, the running count of
// their whole blocks (ends[f]: the blocks of files 0..f), and the largest alignment.
struct DirectFiles {
  std::vector<UniqueFd> fds;
  std::vector<uint64_t> ends;
  uint64_t align = 1;
};

Status OpenDirect(const std::vector<std::string>& paths, uint64_t block, DirectFiles* out) {
  uint64_t blocks = 0;
  for (const std::string& path : paths) {
    UniqueFd fd;
    uint64_t size = 0;
    LB_RETURN_IF_ERROR(OpenReadOnly(path, O_DIRECT, &fd));
    LB_RETURN_IF_ERROR(FileSize(fd.get(), path, &size));
    out->align = std::max(out->align, DirectIoAlignment(fd.get()));
    blocks += size / block;
    out->ends.push_back(blocks);
    out->fds.push_back(std::move(fd));
  }
  if (block % out->align != 0) {
    return Status::Unsupported(
        fmt::format("O_DIRECT here needs {}-byte alignment, which {} requests do not meet",
                    out->align, FormatBytes(block)));
  }
  if (blocks == 0) {
    return Status::BadInput(fmt::format("no file holds a whole {} block", FormatBytes(block)));
  }
  return Status::Ok();
}

// Reads of whole `block`s at random (every whole block of the files alike, a fixed seed), with
// O_DIRECT through the ring read loop, `depth` in flight, until `seconds` have passed; then the
// ones in flight arrive. *bytes: what arrived, *elapsed: from the first request to the last.
Status RandomReads(const std::vector<std::string>& paths, uint64_t block, unsigned depth,
                   double seconds, uint64_t* bytes, double* elapsed) {
  DirectFiles files;
  LB_RETURN_IF_ERROR(OpenDirect(paths, block, &files));
  void* p =
      ::mmap(nullptr, depth * block, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return Status::FromErrno("mmap of the read buffers", errno);
  Mapping buf(p, depth * block);
  std::memset(buf.mutable_data(), 0, buf.size());
  IoRing ring;
  if (const int ret = ring.Init(depth); ret < 0) return Status::Unsupported(RingSetupFailure(-ret));
  std::mt19937_64 rng(0x10adbe7c);
  std::uniform_int_distribution<uint64_t> pick(0, files.ends.back() - 1);
  const auto t0 = Clock::now();
  const auto stop =
      t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  const RingSource next = [&](size_t slot, RingRead* read) {
    if (Interrupted() || Clock::now() >= stop) return false;
    const uint64_t i = pick(rng);
    const auto f = static_cast<size_t>(std::upper_bound(files.ends.begin(), files.ends.end(), i) -
                                       files.ends.begin());
    const uint64_t first = f == 0 ? 0 : files.ends[f - 1];
    *read = {.fd = files.fds[f].get(),
             .offset = (i - first) * block,
             .dst = buf.mutable_data() + slot * block,
             .len = block,
             .need = block,
             .path = paths[f]};
    return true;
  };
  *bytes = 0;
  const RingArrived arrived = [&](size_t, const RingRead& read, uint64_t) {
    *bytes += read.need;
    return Status::Ok();
  };
  const Status s =
      ReadRequests(ring.get(), {.slots = depth, .align = files.align, .name = "random reads"}, next,
                   arrived);
  *elapsed = Since(t0);
  return Interrupted() ? Status::Failed(kInterrupted) : s;
}

// One figure of the sweep: O_DIRECT reads of `shape`, cold, for at most `seconds`; sequential
// ones by an ad-hoc read recipe of one job.
Json RequestFigure(const RequestShape& shape, const std::vector<std::string>& paths,
                   const std::string& device, double seconds, uint64_t total) {
  Json j = {{"pattern", shape.random ? "random" : "sequential"},
            {"request_bytes", shape.request_bytes},
            {"depth", shape.depth},
            {"bytes", nullptr},
            {"seconds", nullptr},
            {"gb_per_s", nullptr},
            {"iops", nullptr},
            {"capped", nullptr}};
  const std::string name = fmt::format("sequential_{}_qd{}", shape.request_bytes, shape.depth);
  const ReadRecipe rc{name.c_str(), true, shape.request_bytes, shape.depth, 1, "none", 0, false};
  j = ColdFigure(std::move(j), paths, device, [&](uint64_t* bytes, double* s) {
    return shape.random ? RandomReads(paths, shape.request_bytes, shape.depth, seconds, bytes, s)
                        : ReadWithRecipe(rc, paths, bytes, s, nullptr, seconds);
  });
  if (j["bytes"].is_number()) {
    const auto bytes = j["bytes"].get<uint64_t>();
    j["iops"] = static_cast<double>(bytes) / static_cast<double>(shape.request_bytes) /
                j["seconds"].get<double>();
    j["capped"] = shape.random || bytes < total;
  }
  return j;
}

// "0.42 GB/s, 1.25 MiB device requests", or "n/a: why".
std::string Said(const Json& m) {
  if (!m["gb_per_s"].is_number()) return "n/a: " + m.value("reason", std::string("no figure"));
  std::string s = fmt::format("{:.3f} GB/s", m["gb_per_s"].get<double>());
  if (m.contains("iops") && m["iops"].is_number()) {
    s += fmt::format(", {:.0f} reads/s", m["iops"].get<double>());
  }
  if (m.value("device_request_bytes", Json()).is_number()) {
    s +=
        fmt::format(", {} device requests", FormatBytes(m["device_request_bytes"].get<uint64_t>()));
  }
  return s;
}

// Counts the figures as they are measured and says each.
struct Progress {
  const std::function<void(const std::string&)>& say;
  size_t total, n = 0;
  void Done(const std::string& what, const Json& m) {
    ++n;
    if (say) say(fmt::format("[{}/{}] {}: {}", n, total, what, Said(m)));
  }
};

// The ceilings: every recipe's read, the fastest of them, and the buffered read.
Json StorageCeilings(const std::vector<std::string>& paths, const std::string& device,
                     double seconds, uint64_t total, Progress* progress) {
  Json limit = {{"gb_per_s", nullptr},
                {"recipe", nullptr},
                {"params", nullptr},
                {"chosen", fmt::format("the fastest recipe, one cold read of at most {:.1f} s "
                                       "each",
                                       seconds)},
                {"recipes", Json::object()}};
  for (const ReadRecipe& rc : kReadRecipes) {
    if (Interrupted()) break;
    Json m = RecipeFigure(rc, paths, device, seconds, total);
    progress->Done(fmt::format("recipe {}", rc.name), m);
    const Json& g = m["gb_per_s"];
    if (g.is_number() && (limit["gb_per_s"].is_null() || g > limit["gb_per_s"])) {
      limit["gb_per_s"] = g;
      limit["recipe"] = rc.name;
      limit["params"] = RecipeParams(rc);
    }
    limit["recipes"][rc.name] = std::move(m);
  }
  if (limit["gb_per_s"].is_null()) limit = Unmeasured(std::move(limit), "no recipe gave a figure");
  Json c = {{"device_limit", limit},
            {"cold_direct_read", limit["recipes"].value(kReadRecipes[0].name, Json())},
            {"cold_buffered_read", nullptr}};
  if (!Interrupted()) {
    c["cold_buffered_read"] = RecipeFigure(kBufferedRead, paths, device, seconds, total);
    progress->Done("buffered read() of 1 MiB, default read-ahead", c["cold_buffered_read"]);
  }
  return c;
}

// The most reads per second of any request figure, and where.
void MostIops(Json* p) {
  (*p)["iops"] = nullptr;
  (*p)["iops_at"] = nullptr;
  for (const Json& r : (*p)["requests"]) {
    if (!r["iops"].is_number()) continue;
    if ((*p)["iops"].is_null() || r["iops"] > (*p)["iops"]) {
      (*p)["iops"] = r["iops"];
      (*p)["iops_at"] = {
          {"request_bytes", r["request_bytes"]}, {"depth", r["depth"]}, {"pattern", r["pattern"]}};
    }
  }
}

std::string ShapeText(const RequestShape& s) {
  return fmt::format("{} {} QD{}", FormatBytes(s.request_bytes), s.random ? "random" : "sequential",
                     s.depth);
}

}  // namespace

const std::vector<RequestShape>& StorageRequestShapes() {
  static const std::vector<RequestShape> shapes = [] {
    std::vector<RequestShape> v;
    for (const uint64_t size : {64 * kKiB, 256 * kKiB, kMiB, 4 * kMiB}) {
      const auto deep = static_cast<unsigned>(std::min<uint64_t>(32, 32 * kMiB / size));
      v.push_back({size, 1, false});
      v.push_back({size, deep, false});
    }
    v.push_back({4 * kKiB, 32, true});
    v.push_back({16 * kKiB, 32, true});
    return v;
  }();
  return shapes;
}

std::optional<DeviceReads> ReadDeviceReads(const std::string& device) {
  if (device.empty() || device.find('/') != std::string::npos) return std::nullopt;
  std::ifstream in("/sys/class/block/" + device + "/stat");  // partitions too
  DeviceReads d;
  uint64_t merges = 0;
  if (!(in >> d.reads >> merges >> d.sectors)) return std::nullopt;
  return d;
}

Status ProbeStorageDevice(const std::vector<std::string>& paths, const std::string& device,
                          nlohmann::ordered_json* out, const StorageProbeOptions& opts) {
  const auto t0 = Clock::now();
  if (paths.empty()) return Status::BadInput("no files to probe");
  uint64_t total = 0;
  for (const std::string& path : paths) {
    UniqueFd fd;
    uint64_t size = 0;
    LB_RETURN_IF_ERROR(OpenReadOnly(path, 0, &fd));
    LB_RETURN_IF_ERROR(FileSize(fd.get(), path, &size));
    total += size;
  }
  if (total == 0) return Status::BadInput(fmt::format("{}: no bytes to read", paths[0]));
  const std::vector<RequestShape>& shapes = StorageRequestShapes();
  Progress progress{opts.progress, std::size(kReadRecipes) + 1 + shapes.size()};
  Json p = {{"device", device.empty() ? Json() : Json(device)},
            {"files", paths},
            {"bytes", total},
            {"figure_seconds", opts.figure_seconds}};
  p["ceilings"] = StorageCeilings(paths, device, opts.figure_seconds, total, &progress);
  p["requests"] = Json::array();
  for (const RequestShape& shape : shapes) {
    if (Interrupted()) break;
    Json r = RequestFigure(shape, paths, device, opts.figure_seconds, total);
    progress.Done(ShapeText(shape), r);
    p["requests"].push_back(std::move(r));
  }
  if (Interrupted()) return Status::Failed(kInterrupted);
  MostIops(&p);
  p["wall_s"] = Since(t0);
  *out = std::move(p);
  return Status::Ok();
}

std::string StorageProbeTable(const nlohmann::ordered_json& probe) {
  auto cell = [](const Json& v, const char* format) {
    return v.is_number() ? fmt::format(fmt::runtime(format), v.get<double>()) : "n/a";
  };
  auto request = [](const Json& m) {
    const Json& r = m.value("device_request_bytes", Json());
    return r.is_number() ? FormatBytes(r.get<uint64_t>()) : "-";
  };
  const Json& c = probe["ceilings"];
  std::string out =
      fmt::format("{:<28} {:>8}  {:>14}  {}\n", "read (cold)", "GB/s", "device request", "");
  const Json recipes = c["device_limit"].value("recipes", Json::object());
  for (const auto& [name, m] : recipes.items()) {
    out += fmt::format("{:<28} {:>8}  {:>14}  {}\n", name, cell(m["gb_per_s"], "{:.3f}"),
                       request(m), m.contains("reason") ? m["reason"].get<std::string>() : "");
  }
  const Json& b = c["cold_buffered_read"];
  if (b.is_object()) {
    out += fmt::format("{:<28} {:>8}  {:>14}  {}\n", "buffered_1m (read(), default)",
                       cell(b["gb_per_s"], "{:.3f}"), request(b), b.value("reason", ""));
  }
  const Json& limit = c["device_limit"];
  out += fmt::format("device limit: {} GB/s by {}\n\n", cell(limit["gb_per_s"], "{:.3f}"),
                     limit["recipe"].is_string() ? limit["recipe"].get<std::string>() : "none");
  out += fmt::format("{:>10} {:>5} {:<10} {:>8} {:>9}  {:>14}\n", "request", "depth", "pattern",
                     "GB/s", "IOPS", "device request");
  for (const Json& r : probe["requests"]) {
    out += fmt::format("{:>10} {:>5} {:<10} {:>8} {:>9}  {:>14}  {}\n",
                       FormatBytes(r["request_bytes"].get<uint64_t>()), r["depth"].get<unsigned>(),
                       r["pattern"].get<std::string>(), cell(r["gb_per_s"], "{:.3f}"),
                       cell(r["iops"], "{:.0f}"), request(r), r.value("reason", ""));
  }
  out += fmt::format("most reads per second: {}\n", cell(probe["iops"], "{:.0f}"));
  return out;
}

}  // namespace loadbench::probe
