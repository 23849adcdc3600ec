// What the CUDA strategies share: whether a GPU is usable here and why not, CUDA errors as
// Status values that name the file, owners for device, pinned and registered memory, streams
// and events, and where each tensor goes in the packed device copy of the table.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loaders/base/status.h"
#include "loaders/format/tensor_table.h"
#include "loaders/strategy/strategy.h"

namespace loadbench::cuda {

// Empty when a CUDA device can be used, else why not, in words a user can act on ("no CUDA
// driver: libcuda.so.1 ...", "no CUDA device"). Asked once per process.
const std::string& UnsupportedReason();

// kIOError "PATH: WHAT: cudaErrorName (description)"; device memory exhaustion is kUnsupported,
// since the file does not fit this GPU. Ok for cudaSuccess.
Status Check(cudaError_t err, const std::string& path, const char* what);

// The device every strategy uses (device 0): name, memory, driver and runtime versions.
nlohmann::ordered_json DeviceInfo();

// Where tensor i starts in the packed device copy: the tensors back to back in table order,
// so that the device checksum reads them as the host checksum does.
std::vector<uint64_t> PackedOffsets(const TensorTable& table);

// A piece of the file that goes to the device: file bytes [file_offset, +size) to packed
// offset `device_offset`.
struct Piece {
  uint64_t file_offset = 0;
  uint64_t device_offset = 0;
  uint64_t size = 0;
};
// The pieces of the file range [begin, end): every tensor's overlap with it, in file order.
std::vector<Piece> PiecesIn(const TensorTable& table, const std::vector<uint64_t>& packed,
                            uint64_t begin, uint64_t end);

class DeviceMemory final {
 public:
  DeviceMemory() = default;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  ~DeviceMemory();
  Status Allocate(uint64_t bytes, const std::string& path);
  std::byte* get() const { return ptr_; }
  uint64_t size() const { return size_; }

 private:
  std::byte* ptr_ = nullptr;
  uint64_t size_ = 0;
};

// Page-locked host memory (cudaHostAlloc): the bounce buffers.
class PinnedMemory final {
 public:
  PinnedMemory() = default;
  PinnedMemory(const PinnedMemory&) = delete;
  PinnedMemory& operator=(const PinnedMemory&) = delete;
  ~PinnedMemory();
  Status Allocate(uint64_t bytes, const std::string& path);
  std::byte* get() const { return ptr_; }

 private:
  std::byte* ptr_ = nullptr;
};

// Existing host memory page-locked in place (cudaHostRegister) until this is destroyed.
class HostRegistration final {
 public:
  HostRegistration() = default;
  HostRegistration(const HostRegistration&) = delete;
  HostRegistration& operator=(const HostRegistration&) = delete;
  HostRegistration(HostRegistration&& o) noexcept : ptr_(o.ptr_) { o.ptr_ = nullptr; }
  ~HostRegistration();
  Status Register(const void* ptr, uint64_t bytes, unsigned flags, const std::string& path);

 private:
  void* ptr_ = nullptr;
};

class Stream final {
 public:
  Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Stream(Stream&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
  ~Stream();
  Status Create(const std::string& path);
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

class Event final {
 public:
  Event() = default;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& o) noexcept : e_(o.e_) { o.e_ = nullptr; }
  ~Event();
  Status Create(const std::string& path);
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

// The common part of a device strategy: Load (host memory) is not what it does.
class DeviceLoader : public Loader {
 public:
  Status Load(const std::string& path, const TensorTable&, std::vector<TensorBytes>*) final {
    return Status::Unsupported(path + ": a device strategy loads into GPU memory");
  }
};

// The device checksum of `out`'s packed tensors, on `stream`, and the time it came back: the
// end of a device load. Sets out->checksum, out->verified and out->device_bytes.
Status Verify(const DeviceMemory& tensors, cudaStream_t stream, const std::string& path,
              DeviceLoad* out);

}  // namespace loadbench::cuda
