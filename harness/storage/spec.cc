// A storage as the user states it: its kind, the options each kind takes (declared here, beside
// the code that checks them), the device class presets with their published figures, and the
// label the records carry.
#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/storage/parts.h"
#include "harness/storage/storage.h"
#include "loaders/base/units.h"

namespace loadbench {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

// A kind, whether it has a loop device of its own, and its own options with the values each
// takes ({} for a size).
struct KindOptions {
  const char* kind;
  bool loop;
  std::vector<std::pair<std::string, std::vector<std::string>>> options;
};

const std::vector<KindOptions>& Kinds() {
  static const std::vector<KindOptions> kinds = {
      {"here", false, {}},
      {"ext4", true, {}},
      {"xfs", true, {}},
      // btrfs's mount option compress=ALG (none: no compression, btrfs's default).
      {"btrfs", true, {{"compress", {"none", "zstd", "lzo", "zlib"}}}},
      // mksquashfs -comp ALG (none: -noI -noD -noF -noX). lzma is left out: the kernel's
      // squashfs does not read it.
      {"squashfs", true, {{"compress", {"none", "gzip", "lz4", "zstd", "xz", "lzo"}}}},
      // mkfs.erofs -zALG: Debian 12's erofs-utils 1.5 is built with lz4 and lz4hc only.
      {"erofs", true, {{"compress", {"none", "lz4", "lz4hc"}}}},
      {"overlay", true, {}},
      {"tmpfs", false, {}},
      // rclone mount's --vfs-cache-mode and --vfs-read-chunk-size.
      {"fuse", false, {{"cache", {"off", "full"}}, {"chunk", {}}}},
  };
  return kinds;
}

const KindOptions* FindKind(const std::string& kind) {
  for (const KindOptions& k : Kinds()) {
    if (kind == k.kind) return &k;
  }
  return nullptr;
}

const DevicePreset* FindPreset(const std::string& name) {
  for (const DevicePreset& p : DevicePresets()) {
    if (name == p.name) return &p;
  }
  return nullptr;
}

std::vector<std::string> OptionNames(const KindOptions& k) {
  std::vector<std::string> names;
  for (const auto& [key, values] : k.options) names.push_back(key);
  if (k.loop) names.insert(names.end(), {"read_bps", "read_iops", "preset"});
  names.push_back("label");
  return names;
}

std::vector<std::string> PresetNames() {
  std::vector<std::string> names;
  for (const DevicePreset& p : DevicePresets()) names.push_back(p.name);
  return names;
}

// A byte rate as written back into a label: the shortest exact form, decimal first ("400MB",
// "125MiB", "1GB", "1000").
std::string SizeText(uint64_t v) {
  static const std::pair<uint64_t, const char*> kUnits[] = {
      {1000000000000, "TB"},      {1000000000, "GB"},         {1000000, "MB"}, {1000, "KB"},
      {uint64_t{1} << 40, "TiB"}, {uint64_t{1} << 30, "GiB"}, {kMiB, "MiB"},   {1024, "KiB"}};
  std::string best = std::to_string(v);
  for (const auto& [factor, unit] : kUnits) {
    if (v == 0 || v % factor != 0) continue;
    std::string text = fmt::format("{}{}", v / factor, unit);
    if (text.size() < best.size()) best = std::move(text);
  }
  return best;
}

Status SetDeviceOption(const std::string& key, const std::string& value, StorageSpec* s) {
  DeviceClass& d = s->device;
  if (key == "preset") {
    const DevicePreset* p = FindPreset(value);
    if (p == nullptr) {
      return Status::BadInput(fmt::format("no device class preset {} (the presets: {})", value,
                                          fmt::join(PresetNames(), ", ")));
    }
    // A figure given before the preset stays; one that came from an earlier preset does not.
    const DevicePreset* old = FindPreset(d.preset);
    if (d.read_bps == 0 || (old != nullptr && d.read_bps == old->read_bps)) {
      d.read_bps = p->read_bps;
    }
    if (d.read_iops == 0 || (old != nullptr && d.read_iops == old->read_iops)) {
      d.read_iops = p->read_iops;
    }
    d.preset = value;
    return Status::Ok();
  }
  uint64_t v = 0;
  if (key == "read_bps") {
    LB_RETURN_IF_ERROR(ParseBytes(value, "read_bps", &v));
  } else {
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || end != value.data() + value.size()) {
      return Status::BadInput(fmt::format("read_iops: '{}' is not a whole number", value));
    }
  }
  if (v == 0) {
    return Status::BadInput(fmt::format(
        "{}=0: a throttle of nothing per second (leave {} out for no limit of that kind)", key,
        key));
  }
  (key == "read_bps" ? d.read_bps : d.read_iops) = v;
  return Status::Ok();
}

// The kind's own option checked against the values it takes, and set (in place when given
// before, else after the others).
Status SetOwnOption(const KindOptions& k, const std::string& key, const std::string& value,
                    StorageSpec* s) {
  const auto it = std::find_if(k.options.begin(), k.options.end(),
                               [&](const auto& o) { return o.first == key; });
  const std::vector<std::string>& values = it->second;
  if (!values.empty() && std::find(values.begin(), values.end(), value) == values.end()) {
    const std::string why = s->kind == "erofs" && value == "lzma"
                                ? " (Debian 12's erofs-utils is built without lzma)"
                                : "";
    return Status::BadInput(fmt::format("{} {} {}: not offered{} (it takes: {})", s->kind, key,
                                        value, why, fmt::join(values, ", ")));
  }
  if (values.empty()) {  // a size
    uint64_t bytes = 0;
    LB_RETURN_IF_ERROR(ParseBytes(value, key, &bytes));
  }
  for (auto& [name, v] : s->options) {
    if (name == key) {
      v = value;
      return Status::Ok();
    }
  }
  s->options.emplace_back(key, value);
  return Status::Ok();
}

}  // namespace

const std::vector<DevicePreset>& DevicePresets() {
  // Each figure as its maker publishes it, in its unit: MB = 10^6 bytes (Seagate and Samsung
  // say so in their data sheets), MiB = 2^20 bytes (AWS gives EBS throughput in MiB/s).
  static const std::vector<DevicePreset> presets = {
      {"hdd", 270'000'000, 170,
       "a 7,200 rpm 3.5-inch hard disk (Seagate Exos X18: 270 MB/s sustained at the outer "
       "tracks, 170 random 4K reads per second at queue depth 16)",
       "Seagate Exos X18 data sheet (DS2045, from "
       "https://www.seagate.com/products/enterprise-drives/exos-x/x18/): max. sustained transfer "
       "rate OD "
       "270 MB/s, random read 4K QD16 WCD 170 IOPS; the X18 SAS Product Manual (publication "
       "100865853) has the same drive's performance characteristics"},
      {"sata_ssd", 560'000'000, 98'000,
       "a SATA SSD (Samsung 870 EVO: 560 MB/s sequential read, 98,000 random 4K reads per "
       "second at queue depth 32)",
       "Samsung 870 EVO specifications, "
       "https://www.tomshardware.com/news/samsung-announces-870-evo"},
      {"gp3", 125 * kMiB, 3'000, "AWS EBS gp3 at its baseline (125 MiB/s, 3,000 IOPS)",
       "https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html"},
      {"gp3_max", 1000 * kMiB, 16'000,
       "AWS EBS gp3 provisioned to its long-standing per-volume maximum (1,000 MiB/s, 16,000 "
       "IOPS)",
       "https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html"},
  };
  return presets;
}

const std::vector<std::string>& StorageKinds() {
  static const std::vector<std::string> kinds = [] {
    std::vector<std::string> out;
    for (const KindOptions& k : Kinds()) out.push_back(k.kind);
    return out;
  }();
  return kinds;
}

bool StorageSpec::loop_backed() const {
  const KindOptions* k = FindKind(kind);
  return k != nullptr && k->loop;
}

std::string LabelOf(const StorageSpec& s) {
  std::string out = s.kind;
  for (const auto& [key, value] : s.options) out += fmt::format(":{}={}", key, value);
  const DevicePreset* p = FindPreset(s.device.preset);
  if (p != nullptr) out += ":preset=" + s.device.preset;
  if (s.device.read_bps > 0 && (p == nullptr || p->read_bps != s.device.read_bps)) {
    out += ":read_bps=" + SizeText(s.device.read_bps);
  }
  if (s.device.read_iops > 0 && (p == nullptr || p->read_iops != s.device.read_iops)) {
    out += fmt::format(":read_iops={}", s.device.read_iops);
  }
  return out;
}

Status SetStorageOption(const std::string& key, const std::string& value, StorageSpec* s) {
  const KindOptions* k = FindKind(s->kind);
  if (k == nullptr) {
    return Status::BadInput(fmt::format("no storage kind {} (the kinds: {})", s->kind,
                                        fmt::join(StorageKinds(), ", ")));
  }
  if (key == "label") {
    if (value.empty()) return Status::BadInput("an empty storage label");
    s->label = value;
    return Status::Ok();
  }
  if (key == "read_bps" || key == "read_iops" || key == "preset") {
    if (!k->loop) {
      return Status::BadInput(fmt::format(
          "{}={}: {} has no loop device to throttle (a device class is for ext4, xfs, btrfs, "
          "squashfs, erofs and overlay)",
          key, value, s->kind));
    }
    return SetDeviceOption(key, value, s);
  }
  for (const auto& [name, values] : k->options) {
    if (name == key) return SetOwnOption(*k, key, value, s);
  }
  return Status::BadInput(fmt::format("{} takes no option {} (it takes: {})", s->kind, key,
                                      fmt::join(OptionNames(*k), ", ")));
}

Status ParseStorage(const std::string& text, StorageSpec* out) {
  StorageSpec s;
  const size_t colon = text.find(':');
  s.kind = text.substr(0, colon);
  if (FindKind(s.kind) == nullptr) {
    return Status::BadInput(fmt::format("storage '{}': no kind {} (the kinds: {})", text, s.kind,
                                        fmt::join(StorageKinds(), ", ")));
  }
  for (size_t at = colon; at != std::string::npos;) {
    const size_t next = text.find(':', at + 1);
    const std::string item = text.substr(at + 1, next == std::string::npos ? next : next - at - 1);
    at = next;
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::BadInput(fmt::format(
          "storage '{}': '{}' is not OPTION=VALUE (KIND[:OPTION=VALUE...])", text, item));
    }
    Status st = SetStorageOption(item.substr(0, eq), item.substr(eq + 1), &s);
    if (!st.ok()) return Status::BadInput(fmt::format("storage '{}': {}", text, st.message()));
  }
  if (s.label.empty()) s.label = LabelOf(s);
  *out = std::move(s);
  return Status::Ok();
}

std::string OptionOf(const StorageSpec& spec, const std::string& key) {
  for (const auto& [k, v] : spec.options) {
    if (k == key) return v;
  }
  return "";
}

std::string DefaultCompress(const std::string& kind) {
  return kind == "squashfs" ? "zstd" : "none";
}

}  // namespace loadbench
