// The read recipes of the device's limit: ways to read every byte of a set of files from
// storage, of which the fastest, cold, is the limit (the probe's `device_limit`, the rounds'
// ceiling: docs/rounds.md). One recipe is not enough: where the disk is a file on a VM's host,
// buffered reads with a deep read-ahead outrun a queue of 1 MiB O_DIRECT reads, and a ceiling
// that a strategy beats says nothing about how far it is from the limit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "loaders/base/status.h"

namespace loadbench::probe {

struct ReadRecipe {
  const char* name;
  bool direct;           // O_DIRECT through io_uring; else pread() through the page cache
  uint64_t block_bytes;  // of each request
  unsigned queue_depth;  // direct: requests in flight per job; buffered: 1 (one read at a time)
  unsigned jobs;         // threads, each reading its own contiguous share of the bytes
  // buffered: posix_fadvise "sequential" (the read-ahead window doubled), "willneed" (asked
  // ahead_bytes ahead of the reads) or "normal" (none: the default read-ahead), or "mapped"
  // (no read(): the file mapped with MADV_SEQUENTIAL and a byte of every page touched, as a
  // mapping's reader does, so that fault read-ahead sends the requests); direct: "none"
  const char* advice;
  uint64_t ahead_bytes;  // "willneed": how far ahead of its reads a job asks for its bytes
  // direct: the buffers on transparent huge pages (MADV_HUGEPAGE, 2 MiB aligned). A device
  // whose requests take at most max_segments segments (a loop device: 128) splits a request
  // into 4 KiB pages at 512 KiB; physically contiguous buffers let it reach max_sectors_kb.
  bool huge_pages;
};

inline constexpr uint64_t kRecipeMiB = uint64_t{1} << 20;
// The candidates, the probe's old cold direct read first. On a device that limits operations
// per second the largest requests win: a loop device throttled to 300 IOPS splits a 4 MiB
// O_DIRECT read from 4 KiB pages into 512 KiB requests (0.16 GB/s), from huge pages into
// 1 MiB ones (0.32 GB/s), while buffered read-ahead asks 1.25 MiB at a time (0.4 GB/s;
// docs/probe.md). Throttled to 170 or 250 IOPS, the mappings (mmap_seq, mmap_prefetch) beat
// every read() recipe by 8 to 18% with the same 1.2 MiB requests (docs/storage.md): the
// mapped recipe reads as they do.
inline constexpr ReadRecipe kReadRecipes[] = {
    {"direct_1m_qd32", true, kRecipeMiB, 32, 1, "none", 0, false},
    {"direct_4m_qd8_x4", true, 4 * kRecipeMiB, 8, 4, "none", 0, false},
    {"direct_4m_qd8_x4_huge", true, 4 * kRecipeMiB, 8, 4, "none", 0, true},
    {"buffered_4m_seq_x4", false, 4 * kRecipeMiB, 1, 4, "sequential", 0, false},
    {"buffered_4m_seq_x1", false, 4 * kRecipeMiB, 1, 1, "sequential", 0, false},
    {"buffered_4m_willneed_x4", false, 4 * kRecipeMiB, 1, 4, "willneed", 64 * kRecipeMiB, false},
    {"mapped_4m_seq_x1", false, 4 * kRecipeMiB, 1, 1, "mapped", 0, false},
};

// The recipe named `name`, or nullptr.
const ReadRecipe* FindRecipe(std::string_view name);

// The recipe as a record's params: its name and every parameter, scalars only.
nlohmann::ordered_json RecipeParams(const ReadRecipe& recipe);

// Sees each block of a file as it arrives: the file's index in the paths, the block's offset
// and bytes. Called from the recipe's threads at once.
using BlockSink =
    std::function<void(size_t file, uint64_t offset, const std::byte* data, size_t len)>;

// Reads every byte of the files at `paths`, whole, by `recipe`: the bytes are split into
// `recipe.jobs` contiguous shares of whole blocks (file after file), one thread each. Opening
// the files and faulting in the buffers come before the clock starts. *bytes gets the bytes
// read (the files' sizes added up), *seconds the time from starting the threads to the last of
// them ending. `sink`, where given, sees every block (tests check the bytes with it). With
// O_DIRECT refused or an alignment the buffers cannot meet, kUnsupported.
// `max_seconds` > 0 bounds the read by time: past it no job starts another request (the ones
// in flight still arrive), and *bytes is what arrived by then, from the front of each share.
Status ReadWithRecipe(const ReadRecipe& recipe, const std::vector<std::string>& paths,
                      uint64_t* bytes, double* seconds, const BlockSink& sink = nullptr,
                      double max_seconds = 0);

// Cold reads of the files by `recipe`, `reps` times, every file's cache dropped and checked
// <= 1% resident before each: the probe's bandwidth record (the best repetition is
// gb_per_s) with "recipe", "params" (RecipeParams), "cold_checks", and "unsupported": true
// beside the reason where the recipe cannot run here.
nlohmann::ordered_json ColdRecipeRead(const ReadRecipe& recipe,
                                      const std::vector<std::string>& paths, int reps);

// The probe's device limit: ColdRecipeRead of every recipe, and the fastest: gb_per_s, "recipe"
// and "params" of the fastest (null, with a reason, when none gave a figure), and "recipes":
// every recipe's record by name.
nlohmann::ordered_json DeviceLimit(const std::vector<std::string>& paths, int reps);

}  // namespace loadbench::probe
