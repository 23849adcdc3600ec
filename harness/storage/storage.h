// The storage a model sits on, made by the tool for an experiment's runs and removed after
// (docs/storage.md): a file system on a file-backed loop device (ext4, xfs, btrfs), a read-only
// image (squashfs, erofs), an overlayfs whose lower layer holds the model, a tmpfs, an rclone
// FUSE mount of the experiment's server, or the data folder as it is (`here`). A loop-backed
// storage may have a device class: its reads throttled by bytes and operations per second with
// the blkio controller, for every process of the command while the storage is entered. Every
// mount, loop device, image, cgroup and process is journaled before it is made
// (process/journal.h), so that a killed command's storage is removed by the next measuring
// command (leftovers/leftovers.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loaders/base/status.h"

namespace loadbench {

// A device class: reads limited per second by bytes and by operations (0: no limit of that kind).
struct DeviceClass {
  std::string preset;     // the preset it started from ("gp3"), or ""
  uint64_t read_bps = 0;  // bytes per second
  uint64_t read_iops = 0;
  bool on() const { return read_bps > 0 || read_iops > 0; }
};

// A named device class with its published source (docs/storage.md's table is made from these).
struct DevicePreset {
  const char* name;
  uint64_t read_bps;
  uint64_t read_iops;
  const char* what;    // "a 7,200 rpm hard disk", "AWS EBS gp3 at its baseline"
  const char* source;  // where the figures are published
};
const std::vector<DevicePreset>& DevicePresets();

// One value of the [[storage]] axis, as the experiment (or `run --storage`) states it.
struct StorageSpec {
  std::string kind = "here";  // here, ext4, xfs, btrfs, squashfs, erofs, overlay, tmpfs, fuse
  // Options other than the device class, as written: btrfs compress, squashfs/erofs compress,
  // fuse cache and chunk; in the order given.
  std::vector<std::pair<std::string, std::string>> options;
  DeviceClass device;
  std::string label;  // the records' `storage`: given, or LabelOf (kind and its options)
  bool here() const { return kind == "here"; }
  // Whether the tool makes it (every kind but here), and whether it has a block device of its
  // own whose reads can be throttled and counted (ext4, xfs, btrfs, squashfs, erofs, overlay:
  // its lower layer on an ext4 loop device).
  bool made() const { return !here(); }
  bool loop_backed() const;
};

// The kinds, in the order docs and --help list them.
const std::vector<std::string>& StorageKinds();

// "xfs:read_bps=400MB:read_iops=1500": kind, then each option and the device class as given
// (a preset as preset=NAME, then what overrides it).
std::string LabelOf(const StorageSpec& s);

// Reads one storage from "KIND[:OPTION=VALUE...]" (`run --storage`). Checks what SetOption
// checks. kBadInput naming the text and the reason.
Status ParseStorage(const std::string& text, StorageSpec* out);
// Sets one option of `s` (its kind set first): read_bps (a size: "400MB", "1GiB"), read_iops (an
// integer), preset (a name of DevicePresets; later read_bps/read_iops override it; a preset
// given after them does not undo them), label, and the kind's own (compress, cache, chunk).
// kBadInput with the reason (unknown option for the kind, unknown preset, a throttle of 0, a
// compression the tool does not offer, a device class on a storage with no loop device).
Status SetStorageOption(const std::string& key, const std::string& value, StorageSpec* s);
// What a kind needs that this machine may lack, checked before any run: root (every made kind),
// its programs (mkfs.xfs, mksquashfs, rclone, ...; named with their Debian package), the
// kernel's file system, in /proc/filesystems, the blkio controller for a device class; and free
// space for `model_bytes` where the storage is made (a backing file or image in /tmp). "" when
// it can be made, else the reason in one line.
std::string StorageUnavailable(const StorageSpec& s, uint64_t model_bytes);

// The block device's own counters (/sys/block/NAME/stat), read side.
struct DeviceStat {
  uint64_t reads = 0, read_merges = 0, read_sectors = 0, read_ms = 0;
  uint64_t in_flight = 0, io_ms = 0, queue_ms = 0;  // time in queue: the weighted field
};

struct StorageParts;  // harness/storage/parts.h

// A storage as made: where the model's files are, and what it is. Removed (unmounted, detached,
// its files and cgroup gone, its processes ended, every journal line struck off) when destroyed.
class Storage {
 public:
  // Makes `spec` and copies the model's files (`files`: absolute paths, all in one folder: a
  // model's index and shards, or its one file) into it, synced; for the fuse kind, mounts
  // `server_url` (the experiment's server's endpoint for the data folder: "http://ADDR:PORT/" or
  // "s3://BUCKET" with `s3_endpoint`) instead of copying. `who` prefixes progress lines on
  // stderr (each step and its time). kBadInput / kUnsupported / kIOError with the reason; nothing
  // is left behind on failure.
  struct Made {
    std::string who;
    std::vector<std::string> files;
    std::string server_url, s3_endpoint;  // fuse only
    // fuse only: the local folder the server serves (the data folder); PathOf(path) is the
    // mount point joined with path's name relative to it (PathOf(served_root): the mount point).
    std::string served_root;
  };
  static Status Make(const StorageSpec& spec, const Made& how, std::unique_ptr<Storage>* out);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  const StorageSpec& spec() const { return spec_; }
  // Where file `path` of the model (one of Made::files) is on this storage.
  std::string PathOf(const std::string& path) const;
  // The block device whose counters describe reads of the model ("loop3"), "" for none (tmpfs,
  // fuse).
  const std::string& device() const { return device_; }
  // Its counters now; nullopt without a device.
  std::optional<DeviceStat> Stat() const;
  // Where the page cache of the model's files on it is kept, when not in those files' own:
  // an overlay's lower layer (the folder the overlay's root maps onto), else "". A cache
  // state is made and checked there (harness/cache/served.h).
  std::string CachedIn() const;

  // The device class applied to this process (and so to everything it starts after) until
  // Leave: this process moved into a blkio cgroup of its own (v1 blkio.throttle.read_*_device,
  // or v2 io.max) whose limits name the loop device. Does nothing without a device class.
  Status Enter();
  Status Leave();

  // env.json's entry: kind, label, options, device class, the loop device and its read_ahead_kb
  // and max_sectors_kb, the file system, mkfs's (or mksquashfs's, ...) version and arguments,
  // mount options, the backing file's or image's bytes, and the seconds making it took.
  nlohmann::ordered_json Env() const;

 private:
  Storage();
  StorageSpec spec_;
  std::string device_;
  // Implementation state (mount points, loop devices, backing folder, cgroup, process): in
  // harness/storage/parts.h, private to the folder.
  std::unique_ptr<StorageParts> parts_;
};

}  // namespace loadbench
