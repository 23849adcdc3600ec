#include "harness/gen/encoder.h"

#include <fmt/format.h>

#include "loaders/base/file_io.h"

namespace loadbench {
namespace {

struct NamedEncoder {
  const char* name;  // as GenOptions::format and --format give it
  const GenEncoder& (*get)();
};

// Every format the generator writes, in the order messages name them.
constexpr NamedEncoder kEncoders[] = {
    {"wlf", WlfEncoder},
    {"safetensors", SafetensorsEncoder},
    {"gguf", GgufEncoder},
};

}  // namespace

Status GenEncoder::WriteTail(const GenPlan&, const FileLayout&, int, const std::string&) const {
  return Status::Ok();
}

const GenEncoder* FindEncoder(const std::string& format) {
  for (const NamedEncoder& e : kEncoders) {
    if (format == e.name) return &e.get();
  }
  return nullptr;
}

std::string EncoderNames() {
  std::string names;
  for (size_t i = 0; i < std::size(kEncoders); ++i) {
    if (i > 0) names += i + 1 == std::size(kEncoders) ? " or " : ", ";
    names += kEncoders[i].name;
  }
  return names;
}

Status BigEndianRefused(const char* why) {
  return Status::BadInput(fmt::format("endian big is for WLF only ({}); use format wlf", why));
}

Status MisalignRefused(uint64_t misalign, const char* format) {
  return Status::BadInput(
      fmt::format("misalign {}: {} places every tensor on its alignment, so its tensors cannot be "
                  "misaligned; use format safetensors",
                  misalign, format));
}

Status WriteHead(const GenEncoder& encoder, const GenPlan& plan, const HeadOf& of,
                 const FileLayout& layout, int fd, const std::string& path) {
  std::vector<std::byte> head;
  FileLayout again;
  LB_RETURN_IF_ERROR(encoder.EncodeHead(plan, of, &again, &head));
  if (head.size() != layout.data_offset || again.data_offset != layout.data_offset) {
    return Status::Failed(fmt::format("encoded head is {} bytes, layout expects {}", head.size(),
                                      layout.data_offset));
  }
  LB_RETURN_IF_ERROR(PwriteExact(fd, path, head.data(), head.size(), 0));
  return encoder.WriteTail(plan, layout, fd, path);
}

}  // namespace loadbench
