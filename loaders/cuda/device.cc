#include "loaders/cuda/device.h"

#include <dlfcn.h>

#include <algorithm>

#include <fmt/format.h>

#include "loaders/cuda/device_checksum.h"

namespace loadbench::cuda {
namespace {

std::string ErrorText(cudaError_t err) {
  return fmt::format("{} ({})", cudaGetErrorName(err), cudaGetErrorString(err));
}

std::string FindReason() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaSuccess && count > 0) return "";
  if (err == cudaSuccess || err == cudaErrorNoDevice) return "no CUDA device on this machine";
  // The runtime's own words for a missing driver are about versions; say what is missing.
  if (void* h = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD); h == nullptr) {
    void* probe = ::dlopen("libcuda.so.1", RTLD_LAZY);
    if (probe == nullptr) {
      const char* why = ::dlerror();
      return fmt::format("no CUDA driver: {}", why ? why : "libcuda.so.1 not found");
    }
    ::dlclose(probe);
  } else {
    ::dlclose(h);
  }
  return "no usable CUDA device: cudaGetDeviceCount: " + ErrorText(err);
}

}  // namespace

const std::string& UnsupportedReason() {
  static const std::string reason = FindReason();
  return reason;
}

Status Check(cudaError_t err, const std::string& path, const char* what) {
  if (err == cudaSuccess) return Status::Ok();
  cudaGetLastError();  // a non-sticky error would otherwise be reported again by the next call
  const std::string msg = fmt::format("{}: {}: {}", path, what, ErrorText(err));
  if (err == cudaErrorMemoryAllocation) return Status::Unsupported(msg);
  return Status::IOError(msg);
}

nlohmann::ordered_json DeviceInfo() {
  nlohmann::ordered_json j;
  cudaDeviceProp p{};
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return nullptr;
  j["name"] = p.name;
  j["memory_bytes"] = static_cast<uint64_t>(p.totalGlobalMem);
  j["pci_bus_id"] = fmt::format("{:04x}:{:02x}:{:02x}", p.pciDomainID, p.pciBusID, p.pciDeviceID);
  j["compute_capability"] = fmt::format("{}.{}", p.major, p.minor);
  j["driver_version"] = fmt::format("{}.{}", driver / 1000, driver % 1000 / 10);
  j["runtime_version"] = fmt::format("{}.{}", runtime / 1000, runtime % 1000 / 10);
  return j;
}

std::vector<uint64_t> PackedOffsets(const TensorTable& table) {
  std::vector<uint64_t> out(table.tensors.size());
  uint64_t at = 0;
  for (size_t i = 0; i < table.tensors.size(); ++i) {
    out[i] = at;
    at += table.tensors[i].size;
  }
  return out;
}

std::vector<Piece> PiecesIn(const TensorTable& table, const std::vector<uint64_t>& packed,
                            uint64_t begin, uint64_t end) {
  std::vector<Piece> out;
  for (size_t i = 0; i < table.tensors.size(); ++i) {
    const TensorInfo& t = table.tensors[i];
    const uint64_t lo = std::max(begin, t.offset), hi = std::min(end, t.offset + t.size);
    if (lo >= hi) continue;
    out.push_back({lo, packed[i] + (lo - t.offset), hi - lo});
  }
  std::sort(out.begin(), out.end(),
            [](const Piece& a, const Piece& b) { return a.file_offset < b.file_offset; });
  return out;
}

DeviceMemory::~DeviceMemory() {
  if (ptr_) cudaFree(ptr_);
}

Status DeviceMemory::Allocate(uint64_t bytes, const std::string& path) {
  void* p = nullptr;
  // At least one byte: a file of empty tensors still gets an address to hash.
  LB_RETURN_IF_ERROR(Check(cudaMalloc(&p, std::max<uint64_t>(bytes, 1)), path,
                           fmt::format("cudaMalloc of {} bytes", bytes).c_str()));
  ptr_ = static_cast<std::byte*>(p);
  size_ = bytes;
  return Status::Ok();
}

PinnedMemory::~PinnedMemory() {
  if (ptr_) cudaFreeHost(ptr_);
}

Status PinnedMemory::Allocate(uint64_t bytes, const std::string& path) {
  void* p = nullptr;
  LB_RETURN_IF_ERROR(Check(cudaHostAlloc(&p, bytes, cudaHostAllocDefault), path,
                           fmt::format("cudaHostAlloc of {} bytes", bytes).c_str()));
  ptr_ = static_cast<std::byte*>(p);
  return Status::Ok();
}

HostRegistration::~HostRegistration() {
  if (ptr_) cudaHostUnregister(ptr_);
}

Status HostRegistration::Register(const void* ptr, uint64_t bytes, unsigned flags,
                                  const std::string& path) {
  void* p = const_cast<void*>(ptr);
  LB_RETURN_IF_ERROR(Check(cudaHostRegister(p, bytes, flags), path,
                           fmt::format("cudaHostRegister of {} bytes", bytes).c_str()));
  ptr_ = p;
  return Status::Ok();
}

Stream::~Stream() {
  if (s_) cudaStreamDestroy(s_);
}

Status Stream::Create(const std::string& path) {
  return Check(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), path, "cudaStreamCreate");
}

Event::~Event() {
  if (e_) cudaEventDestroy(e_);
}

Status Event::Create(const std::string& path) {
  return Check(cudaEventCreateWithFlags(&e_, cudaEventDisableTiming), path, "cudaEventCreate");
}

Status Verify(const DeviceMemory& tensors, cudaStream_t stream, const std::string& path,
              DeviceLoad* out) {
  LB_RETURN_IF_ERROR(Check(DeviceXxh3(tensors.get(), tensors.size(), stream, &out->checksum), path,
                           "the device checksum"));
  out->verified = std::chrono::steady_clock::now();
  out->device_bytes = tensors.size();
  return Status::Ok();
}

}  // namespace loadbench::cuda
