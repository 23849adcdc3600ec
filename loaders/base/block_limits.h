// The queue limits of the block device a file lives on, read from sysfs: how large a request the
// block layer builds for it, and from how many pieces of memory, so that a reader can size its
// reads to whole requests (loaders/blocks/chunk_reads.h's FitChunks; owned's `fit=device`).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace loadbench {

struct BlockLimits {
  std::string device;               // the disk whose queue this is ("loop3", "nvme0n1"), "" if none
  uint64_t max_sectors_kb = 0;      // the largest request the block layer builds now, in KiB
  uint64_t max_hw_sectors_kb = 0;   // the device's own largest (max_sectors_kb may be raised to it)
  uint64_t max_segments = 0;        // pieces of memory one request may gather
  uint64_t max_segment_size = 0;    // bytes one piece may hold; 0 where the queue does not say
  uint64_t logical_block_size = 0;  // bytes
  bool found() const { return max_sectors_kb > 0 && max_segments > 0 && logical_block_size > 0; }
};

// The limits of block device `dev` (a file's st_dev) under `sys` (/sys, or a stand-in tree in
// tests): SYS/dev/block/MAJ:MIN/queue, or for a partition its disk's queue. Not found() where
// `dev` names no block device (overlay, tmpfs, fuse, NFS, a btrfs subvolume's anonymous device)
// or its queue cannot be read.
BlockLimits BlockLimitsOfDevice(dev_t dev, const std::string& sys = "/sys");

// The limits of the device holding the open file `fd` (its st_dev); not found() where fstat fails.
BlockLimits BlockLimitsOfFile(int fd, const std::string& sys = "/sys");

}  // namespace loadbench
