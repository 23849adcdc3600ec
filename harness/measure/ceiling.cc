#include "harness/measure/ceiling.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/cache/cache.h"
#include "harness/probe/probe.h"
#include "harness/probe/read_recipes.h"
#include "harness/process/interrupt.h"

namespace loadbench {
namespace {

using Json = nlohmann::ordered_json;

// On this kind of VM a cold run that comes right after the ceiling's O_DIRECT read is slow: 1.39x
// its group's median against 0.93x after another run (40 A/A experiments, docs/rounds.md). A
// buffered read of the files in between takes most of that (1.12x against 0.90x over 12), so
// that the strategies' runs pay less for the ceiling. Its seconds, or nullopt when it failed.
std::optional<double> Settle(const std::vector<std::string>& paths) {
  const auto t0 = std::chrono::steady_clock::now();
  for (const std::string& path : paths) {
    if (Status s = WarmFile(path); !s.ok()) {
      fmt::print(stderr, "loadbench: the read after the ceiling: {}\n", s.message());
      return std::nullopt;
    }
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

// The files of `req` as they are now: the model's name, then each file's device, inode and
// change time. The same model on another storage (another device, or the same loop device and
// mount point made again, with another device class) is another key: its recipe is chosen
// again. A file that cannot be stat'ed keys by its path alone.
std::string DiskCeiling::FileKey(const LaunchRequest& req) {
  std::string key = req.worker.file;
  for (const std::string& path : req.file_paths) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      key += fmt::format("|{}", path);
      continue;
    }
    key += fmt::format("|{}|{}:{}:{}:{}.{}", path, major(st.st_dev), minor(st.st_dev), st.st_ino,
                       st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
  }
  return key;
}

namespace {

// The recipe a ceiling run of `req` (its files keyed `key`) repeats, and *by where it was
// chosen ("first_ceiling": the command's first ceiling run of these files, in
// `recipe_of_file`; "probe": the cached probe of this boot, made on the device of every one of
// the files); nullptr where neither chose one. The probe of another device never chooses: a
// storage (a loop device, its device class, an overlay, a tmpfs) is not the device the machine's
// probe measured, and its fastest recipe may be another.
const probe::ReadRecipe* Chosen(const std::map<std::string, std::string>& recipe_of_file,
                                const std::string& key, const LaunchRequest& req, std::string* by) {
  if (const auto it = recipe_of_file.find(key); it != recipe_of_file.end()) {
    *by = "first_ceiling";
    return probe::FindRecipe(it->second);
  }
  std::string why;
  std::optional<Json> cached;
  for (const std::string& path : req.file_paths) {  // every shard on the probe's device
    cached = CachedProbe(path, &why);
    if (!cached || cached->value("same_device", Json()) != true) return nullptr;
  }
  if (!cached) return nullptr;
  const Json limit = (*cached)["ceilings"].value("device_limit", Json());
  const Json name = limit.is_object() ? limit.value("recipe", Json()) : Json();
  const probe::ReadRecipe* recipe =
      name.is_string() ? probe::FindRecipe(name.get<std::string>()) : nullptr;
  if (recipe != nullptr) *by = "probe";
  return recipe;  // a probe's recipe this build does not know: measure them all
}

// Every recipe's figure, by name: {"gb_per_s": x} or {"gb_per_s": null, "reason": why}.
Json Figures(const std::vector<Json>& measured) {
  Json out = Json::object();
  for (const Json& m : measured) {
    Json f = {{"gb_per_s", m["gb_per_s"]}};
    if (m.contains("reason")) f["reason"] = m["reason"];
    out[m["recipe"].get<std::string>()] = std::move(f);
  }
  return out;
}

// The record of the measured recipes: the fastest's figure and params, or why none gave one
// ("unsupported" when none can run here).
void Fill(const std::vector<Json>& measured, const std::string& by, RunRecord* r) {
  const Json* best = nullptr;
  std::vector<std::string> reasons;
  bool all_unsupported = true;
  for (const Json& m : measured) {
    if (m["gb_per_s"].is_number()) {
      if (best == nullptr || m["gb_per_s"] > (*best)["gb_per_s"]) best = &m;
      continue;
    }
    reasons.push_back(
        fmt::format("{}: {}", m["recipe"].get<std::string>(), m.value("reason", "no figure")));
    all_unsupported = all_unsupported && m.value("unsupported", false);
  }
  if (measured.size() > 1) r->ceiling_recipes = Figures(measured);
  if (best == nullptr) {
    r->status = all_unsupported ? "unsupported" : "failed";
    r->error = fmt::format("{}", fmt::join(reasons, "; "));
    return;
  }
  const auto bytes = (*best)["bytes"].get<uint64_t>();
  r->status = "ok";
  r->params = (*best)["params"];
  r->params["chosen"] = by;
  r->gb_per_s = (*best)["gb_per_s"].get<double>();
  r->wall_s = static_cast<double>(bytes) / (*r->gb_per_s * 1e9);
  r->ceiling_bytes = bytes;
}

}  // namespace

void DiskCeiling::Read(const LaunchRequest& req, RunRecord* r) {
  std::string by = "measured";
  std::vector<Json> measured;
  const std::string key = FileKey(req);
  if (const probe::ReadRecipe* chosen = Chosen(recipe_of_file_, key, req, &by)) {
    measured.push_back(probe::ColdRecipeRead(*chosen, req.file_paths, 1));
  } else {
    for (const probe::ReadRecipe& recipe : probe::kReadRecipes) {
      if (Interrupted()) return;
      measured.push_back(probe::ColdRecipeRead(recipe, req.file_paths, 1));
    }
  }
  if (Interrupted()) return;
  Fill(measured, by, r);
  if (r->status == "ok") {
    if (by == "measured") recipe_of_file_[key] = r->params["recipe"];
    r->settle_s = Settle(req.file_paths);
  }
}

}  // namespace loadbench
