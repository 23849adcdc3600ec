// cuda_gds: GPUDirect Storage. cuFile reads each tensor from the file straight into GPU memory
// (cuFileRead), with no bounce buffer of ours. With the nvidia-fs kernel module the storage DMA
// writes the GPU directly; without it cuFile runs in its compatibility mode, reading through
// host buffers of its own, and the record says which.
//
// libcufile is opened at run time, so one binary uses it wherever it is installed and reports
// `unsupported` where it is not; the few declarations it needs are written out below, as the
// cuFile API documents them, since cufile.h ships with the library and not with every toolkit.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "loaders/base/file_io.h"
#include "loaders/cuda/device.h"

namespace loadbench {
namespace {

// The cuFile ABI (cufile.h): errors are {cuFile code, CUDA driver code}; 0 is success.
struct CUfileError_t {
  int err;
  int cu_err;
};
constexpr int kHandleTypeOpaqueFd = 1;  // CU_FILE_HANDLE_TYPE_OPAQUE_FD
struct CUfileDescr_t {
  int type;
  union {
    int fd;
    void* handle;
  } handle;
  const void* fs_ops;
};
using CUfileHandle_t = void*;

// The library and the entry points a load uses.
struct CuFile {
  void* lib = nullptr;
  std::string lib_name;
  CUfileError_t (*driver_open)() = nullptr;
  CUfileError_t (*handle_register)(CUfileHandle_t*, CUfileDescr_t*) = nullptr;
  void (*handle_deregister)(CUfileHandle_t) = nullptr;
  CUfileError_t (*buf_register)(const void*, size_t, int) = nullptr;
  CUfileError_t (*buf_deregister)(const void*) = nullptr;
  ssize_t (*read)(CUfileHandle_t, void*, size_t, off_t, off_t) = nullptr;
  std::string missing;  // why it cannot be used; empty when it can
};

template <typename F>
bool Bind(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(::dlsym(lib, name));
  return *out != nullptr;
}

const CuFile& Library() {
  static const CuFile lib = [] {
    CuFile c;
    for (const char* name : {"libcufile.so.0", "libcufile.so"}) {
      if ((c.lib = ::dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) {
        c.lib_name = name;
        break;
      }
    }
    if (c.lib == nullptr) {
      const char* why = ::dlerror();
      c.missing = fmt::format("cuFile (GPUDirect Storage) is not installed: libcufile.so.0 "
                              "cannot be loaded ({})",
                              why ? why : "not found");
      return c;
    }
    const bool all = Bind(c.lib, "cuFileDriverOpen", &c.driver_open) &&
                     Bind(c.lib, "cuFileHandleRegister", &c.handle_register) &&
                     Bind(c.lib, "cuFileHandleDeregister", &c.handle_deregister) &&
                     Bind(c.lib, "cuFileBufRegister", &c.buf_register) &&
                     Bind(c.lib, "cuFileBufDeregister", &c.buf_deregister) &&
                     Bind(c.lib, "cuFileRead", &c.read);
    if (!all) c.missing = c.lib_name + " lacks a cuFile entry point this strategy calls";
    return c;
  }();
  return lib;
}

std::string Reason() {
  if (const std::string& why = cuda::UnsupportedReason(); !why.empty()) return why;
  return Library().missing;
}

std::string ErrorText(CUfileError_t e) {
  return fmt::format("cuFile error {} (CUDA driver error {})", e.err, e.cu_err);
}

class CudaGdsLoader final : public cuda::DeviceLoader {
 public:
  explicit CudaGdsLoader(const Params& params) : chunk_(params.Bytes("chunk")) {}

  ~CudaGdsLoader() override {
    const CuFile& f = Library();
    if (buf_registered_) f.buf_deregister(device_.get());
    if (handle_ != nullptr) f.handle_deregister(handle_);
  }

  Status LoadToDevice(const std::string& path, const TensorTable& table, DeviceLoad* out) override {
    const CuFile& f = Library();
    if (!f.missing.empty()) return Status::Unsupported(f.missing);
    struct stat st {};
    nvidia_fs_ = ::stat("/proc/driver/nvidia-fs", &st) == 0;
    if (CUfileError_t e = f.driver_open(); e.err != 0) {
      return Status::Unsupported(fmt::format("{}: cuFileDriverOpen: {}", path, ErrorText(e)));
    }
    // O_DIRECT is what GPUDirect reads need; cuFile's compatibility mode takes it too.
    LB_RETURN_IF_ERROR(OpenReadOnly(path, O_DIRECT, &fd_));
    CUfileDescr_t descr{};
    descr.type = kHandleTypeOpaqueFd;
    descr.handle.fd = fd_.get();
    if (CUfileError_t e = f.handle_register(&handle_, &descr); e.err != 0) {
      handle_ = nullptr;
      return Status::Unsupported(fmt::format("{}: cuFileHandleRegister: {}", path, ErrorText(e)));
    }
    LB_RETURN_IF_ERROR(stream_.Create(path));
    LB_RETURN_IF_ERROR(device_.Allocate(table.tensor_bytes, path));
    // Registering the destination lets cuFile DMA into it without its own staging; a refusal
    // is not fatal (reads still work), so it is recorded, not returned.
    buf_registered_ =
        f.buf_register(device_.get(), std::max<uint64_t>(table.tensor_bytes, 1), 0).err == 0;
    const std::vector<uint64_t> packed = cuda::PackedOffsets(table);
    for (size_t i = 0; i < table.tensors.size(); ++i) {
      const TensorInfo& t = table.tensors[i];
      for (uint64_t done = 0; done < t.size;) {
        const uint64_t n = std::min(chunk_, t.size - done);
        const ssize_t got = f.read(handle_, device_.get(), n, static_cast<off_t>(t.offset + done),
                                   static_cast<off_t>(packed[i] + done));
        if (got < 0) {
          const std::string read =
              fmt::format("{}: cuFileRead of {} bytes at offset {}", path, n, t.offset + done);
          return got == -1 ? Status::IOErrorFromErrno(read, errno)
                           : Status::IOError(fmt::format("{}: cuFile error {}", read, -got));
        }
        if (got == 0) {
          return Status::BadInput(
              fmt::format("{}: truncated: the file ends at offset {}, tensor {} needs it up to {}",
                          path, t.offset + done, t.name, t.offset + t.size));
        }
        done += static_cast<uint64_t>(got);
        ++reads_;
      }
    }
    out->on_device = std::chrono::steady_clock::now();
    return cuda::Verify(device_, stream_.get(), path, out);
  }

  nlohmann::json Details() const override {
    return {{"library", Library().lib_name},
            {"nvidia_fs", nvidia_fs_},
            {"mode", nvidia_fs_ ? "direct (nvidia-fs loaded)"
                                : "compatibility (no nvidia-fs: cuFile reads through host "
                                  "buffers)"},
            {"buffer_registered", buf_registered_},
            {"reads", reads_}};
  }

 private:
  const uint64_t chunk_;
  UniqueFd fd_;
  CUfileHandle_t handle_ = nullptr;
  cuda::Stream stream_;
  cuda::DeviceMemory device_;
  bool buf_registered_ = false;
  bool nvidia_fs_ = false;
  uint64_t reads_ = 0;
};

}  // namespace

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "cuda_gds",
    .summary = "GPUDirect Storage: cuFileRead of each tensor straight into GPU memory "
               "(libcufile, opened at run time)",
    .options = {{"chunk", OptionSpec::Kind::kBytes, "16MiB", "bytes per cuFileRead"}},
    .make = [](const Params& p) -> std::unique_ptr<Loader> {
      return std::make_unique<CudaGdsLoader>(p);
    },
    .flags = kDevice | kDirectIO,
    .unsupported_reason = Reason,
}));

}  // namespace loadbench
