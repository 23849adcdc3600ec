// `loadbench probe --storage KIND[:OPTION=VALUE...]`: the scratch file written in --dir with a
// name, a storage made with it (harness/storage/storage.h) and the file removed, the storage's
// device probed from inside it (storage_probe.h), the storage removed; env.json with the probe
// and the storage (under "storages", as a run's).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness/leftovers/leftovers.h"
#include "harness/machine/env.h"
#include "harness/probe/probe_command.h"
#include "harness/probe/probe_measure.h"
#include "harness/probe/storage_probe.h"
#include "harness/process/interrupt.h"
#include "harness/record/results.h"
#include "harness/storage/storage.h"
#include "loaders/base/file_io.h"
#include "loaders/base/units.h"

namespace loadbench::probe {
namespace {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

constexpr const char* kWho = "loadbench probe";

int Say(int code, const std::string& message) {
  fmt::print(stderr, "{}: {}\n", kWho, message);
  return code;
}

// The block device (its /sys/class/block name) holding `dir`, or "" for none (tmpfs, NFS).
std::string BlockDeviceOf(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return "";
  std::error_code ec;
  const fs::path link =
      fs::read_symlink(fmt::format("/sys/dev/block/{}:{}", major(st.st_dev), minor(st.st_dev)), ec);
  return ec ? "" : link.filename().string();
}

// The scratch file with a name (Storage::Make copies files by name), in a folder of its own in
// the scratch dir; removed with its folder by Remove or at the latest when this goes.
class NamedScratch final {
 public:
  NamedScratch() = default;
  NamedScratch(const NamedScratch&) = delete;
  NamedScratch& operator=(const NamedScratch&) = delete;
  ~NamedScratch() { Remove(); }

  // Writes `bytes` of varied bytes, synced (the probe's sequential write).
  Status Write(const std::string& dir, uint64_t bytes) {
    std::string folder = dir + "/.loadbench-probe-storage-XXXXXX";
    if (::mkdtemp(folder.data()) == nullptr) {
      return Status::FromErrno(fmt::format("{}: mkdtemp", folder), errno);
    }
    folder_ = folder;
    path_ = folder_ + "/scratch";
    UniqueFd fd(::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (fd.get() < 0) return Status::FromErrno(fmt::format("{}: open", path_), errno);
    const Json w = SequentialWrite(fd.get(), path_, bytes);
    if (!w["gb_per_s"].is_number()) {
      return Status::IOError(
          fmt::format("{}: the scratch file: {}", path_, w.value("reason", "not written")));
    }
    return Status::Ok();
  }
  void Remove() {
    if (!path_.empty()) ::unlink(path_.c_str());
    if (!folder_.empty()) ::rmdir(folder_.c_str());
    path_.clear();
    folder_.clear();
  }
  const std::string& path() const { return path_; }

 private:
  std::string folder_, path_;
};

// What is checked before anything is made or written: the storage's text, root for a storage
// that is made, --size and the scratch dir, what the machine lacks for the storage.
Status Check(const ProbeOptions& opts, StorageSpec* spec, uint64_t* size, std::string* dir) {
  if (Status s = ParseStorage(opts.storage, spec); !s.ok()) {
    return Status::BadInput("--storage: " + s.message());
  }
  if (spec->made() && ::geteuid() != 0) {
    return Status::BadInput(fmt::format(
        "--storage {}: making a storage needs root (a loop device, mounts, a blkio cgroup); run "
        "it as root, or `loadbench probe` without --storage for the machine's own device",
        opts.storage));
  }
  LB_RETURN_IF_ERROR(CheckProbeScratch(opts, size, dir));
  if (const std::string why = StorageUnavailable(*spec, *size); !why.empty()) {
    return Status::BadInput(fmt::format("--storage {}: {}", opts.storage, why));
  }
  return Status::Ok();
}

// The storage's device figures into the probe object: the device ceilings measured, every other
// ceiling null with the reason, and the request sweep.
void PutDeviceFigures(const Json& measured, Json* probe) {
  for (const CeilingSpec& spec : kCeilings) {
    Json& c = (*probe)["ceilings"][spec.key];
    if (measured["ceilings"].contains(spec.key)) {
      c = measured["ceilings"][spec.key];
    } else {
      c = {{spec.figure, nullptr},
           {"reason", "not measured: `probe --storage` measures the storage's device only; "
                      "`loadbench probe` measures the machine"}};
    }
  }
  (*probe)["storage_device"] = measured["device"];
  for (const char* key : {"figure_seconds", "requests", "iops", "iops_at"}) {
    (*probe)[key] = measured[key];
  }
}

// Probes the device of `paths` (on `storage` when one was made: entered around the probe, so
// that its device class applies) into *probe. The exit code: 0, 1, or 130 interrupted.
int ProbeInside(Storage* storage, const std::vector<std::string>& paths, const std::string& device,
                Json* probe) {
  if (storage != nullptr) {
    if (Status s = storage->Enter(); !s.ok()) return Say(1, "entering the storage: " + s.message());
  }
  Json measured;
  const Status s =
      ProbeStorageDevice(paths, device, &measured, {.progress = [](const std::string& line) {
                           fmt::print(stderr, "probe storage {}\n", line);
                         }});
  if (storage != nullptr) {
    if (Status left = storage->Leave(); !left.ok()) {
      fmt::print(stderr, "{}: leaving the storage: {}\n", kWho, left.message());
    }
  }
  if (Interrupted()) return 130;
  if (!s.ok()) return Say(1, s.message());
  PutDeviceFigures(measured, probe);
  return 0;
}

// Writes the scratch file, makes the storage with it (the file removed once copied in), and
// probes the storage's device: into *probe and *storage_env ("here": the scratch file where it
// is). The exit code: 0; 1 the file not written, the storage not made or not probed; 2 the
// storage refused as bad input or unsupported; 130 interrupted.
int MakeAndProbe(const StorageSpec& spec, const std::string& dir, uint64_t size, Json* probe,
                 Json* storage_env) {
  NamedScratch scratch;
  fmt::print(stderr, "probe storage: writing the {} scratch file in {}\n", FormatBytes(size), dir);
  if (Status s = scratch.Write(dir, size); !s.ok())
    return Interrupted() ? 130 : Say(1, s.message());
  if (!spec.made()) {
    const std::string device = BlockDeviceOf(dir);
    *storage_env = {{"kind", spec.kind},
                    {"label", spec.label},
                    {"device", device.empty() ? Json() : Json(device)}};
    return ProbeInside(nullptr, {scratch.path()}, device, probe);
  }
  std::unique_ptr<Storage> storage;
  const std::string path = scratch.path();
  Storage::Made how;
  how.who = kWho;
  how.files = {path};
  const Status made = Storage::Make(spec, how, &storage);
  scratch.Remove();
  if (Interrupted()) return 130;
  if (!made.ok()) {
    const bool refused =
        made.code() == Status::Code::kBadInput || made.code() == Status::Code::kUnsupported;
    return Say(refused ? 2 : 1, fmt::format("--storage {}: {}", spec.label, made.message()));
  }
  *storage_env = storage->Env();
  return ProbeInside(storage.get(), {storage->PathOf(path)}, storage->device(), probe);
}

// Writes env.json and prints the probe (--json: the object; else the table): the exit code.
int WriteAndShow(const ProbeOptions& opts, const Json& env, const std::string& env_path) {
  if (Status s = WriteJsonFile(env_path, env); !s.ok()) return Say(1, s.message());
  const Json& probe = env["probe"];
  if (opts.json) {
    fmt::print("{}\n", probe.dump(2, ' ', false, Json::error_handler_t::replace));
  } else {
    const Json& device = probe["storage_device"];
    fmt::print("loadbench probe --storage {}: {} scratch file{}, {:.1f} s; each figure cold, "
               "at most {:.2f} s of reads\n\n{}",
               env["storages"][0].value("label", opts.storage),
               FormatBytes(probe["scratch"]["bytes"].get<uint64_t>()),
               device.is_string() ? " on " + device.get<std::string>() : "",
               probe["wall_s"].get<double>(), probe["figure_seconds"].get<double>(),
               StorageProbeTable(probe));
  }
  fmt::print(stderr,
             "results: {} (not cached: the machine's cached probe stays the machine's; the "
             "storage is removed)\n",
             env_path);
  return 0;
}

}  // namespace

int StorageProbeMain(const ProbeOptions& opts) {
  InstallInterruptHandlers();
  const auto t0 = std::chrono::steady_clock::now();
  StorageSpec spec;
  uint64_t size = 0;
  std::string dir;
  if (Status s = Check(opts, &spec, &size, &dir); !s.ok()) return Say(2, s.message());
  HeldLock machine;  // a measurement: one at a time on the machine
  if (Status s = BeginMeasurement(kWho, ThisProcess(opts.command_line, opts.out_dir), !opts.no_wait,
                                  &machine);
      !s.ok()) {
    const int code = Say(2, s.message());
    return Interrupted() ? 130 : code;
  }
  std::string out, env_path;
  if (Status s = MakeProbeOutDir(opts, &out, &env_path); !s.ok()) return Say(2, s.message());
  Json probe = NewProbeObject("storage", dir, size);
  Json storage_env;
  if (const int code = MakeAndProbe(spec, dir, size, &probe, &storage_env); code != 0) {
    ::rmdir(out.c_str());  // created above and still empty; a folder that holds anything stays
    if (code == 130)
      Say(130, "interrupted; the storage and the scratch file are gone, nothing written");
    return code;
  }
  Json env = CollectEnv(dir);
  env["command_line"] = opts.command_line;
  probe["wall_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  probe["facts"] = ProbeFacts(env);
  env["probe"] = std::move(probe);
  // As a run's env.json lists the storages it made (env["storage"] is the machine's disk).
  env["storages"] = Json::array({std::move(storage_env)});
  return WriteAndShow(opts, env, env_path);
}

}  // namespace loadbench::probe
