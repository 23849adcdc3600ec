#include "tests/support/format_builders.h"

#include <cstring>

#include <fmt/format.h>

#include "loaders/base/status.h"
#include "loaders/format/format.h"
#include "loaders/format/tensor_table.h"

namespace loadbench::test {
namespace {

void Append(std::vector<std::byte>* out, std::span<const std::byte> bytes) {
  out->insert(out->end(), bytes.begin(), bytes.end());
}

}  // namespace

std::vector<std::byte> Filler(uint64_t n) {
  std::vector<std::byte> out(n);
  for (uint64_t i = 0; i < n; ++i) out[i] = static_cast<std::byte>(i % 251 + 1);
  return out;
}

std::vector<std::byte> U32Bytes(uint32_t v) {
  std::vector<std::byte> out(sizeof v);
  std::memcpy(out.data(), &v, sizeof v);
  return out;
}

std::vector<std::byte> U64Bytes(uint64_t v) {
  std::vector<std::byte> out(sizeof v);
  std::memcpy(out.data(), &v, sizeof v);
  return out;
}

std::vector<std::byte> TextBytes(std::string_view s) {
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  return std::vector<std::byte>(p, p + s.size());
}

std::vector<std::byte> Cat(std::initializer_list<std::vector<std::byte>> pieces) {
  std::vector<std::byte> out;
  for (const auto& p : pieces) Append(&out, p);
  return out;
}

::testing::AssertionResult Refused(const std::string& path, std::string_view reason) {
  TensorTable t;
  const Status s = ReadTensorTableFromPath(path, &t);
  if (s.ok()) {
    return ::testing::AssertionFailure() << "accepted (" << t.tensors.size()
                                         << " tensors); expected refused for '" << reason << "'";
  }
  const std::string& m = s.message();
  if (s.code() != Status::Code::kBadInput || s.exit_code() != 2) {
    return ::testing::AssertionFailure() << "refused as " << s.code_name() << " (exit code "
                                         << s.exit_code() << "), not bad input: " << m;
  }
  if (!m.starts_with(path)) {
    return ::testing::AssertionFailure() << "message does not start with the path: " << m;
  }
  if (m.find(reason) == std::string::npos) {
    return ::testing::AssertionFailure() << "expected '" << reason << "' in: " << m;
  }
  if (m.find('\n') != std::string::npos) {
    return ::testing::AssertionFailure() << "message is not one line: " << m;
  }
  return ::testing::AssertionSuccess() << m;
}

std::vector<std::byte> SafetensorsBytes(std::string_view json, std::span<const std::byte> data) {
  std::vector<std::byte> out = Cat({U64Bytes(json.size()), TextBytes(json)});
  Append(&out, data);
  return out;
}

std::string StEntry(std::string_view name, std::string_view dtype, std::string_view shape,
                    uint64_t begin, uint64_t end) {
  return fmt::format(R"("{}":{{"dtype":"{}","shape":{},"data_offsets":[{},{}]}})", name, dtype,
                     shape, begin, end);
}

uint64_t GgufScalarSize(uint32_t type) {
  switch (type) {
    case kGgufU8:
    case kGgufI8:
    case kGgufBool:
      return 1;
    case kGgufU16:
    case kGgufI16:
      return 2;
    case kGgufU32:
    case kGgufI32:
    case kGgufF32:
      return 4;
    case kGgufU64:
    case kGgufI64:
    case kGgufF64:
      return 8;
    default:
      return 0;
  }
}

std::vector<std::byte> GgufBuilder::Count(uint64_t n) const {
  return version_ == 1 ? U32Bytes(static_cast<uint32_t>(n)) : U64Bytes(n);
}

std::vector<std::byte> GgufBuilder::Str(std::string_view s) const {
  return Cat({Count(s.size()), TextBytes(s)});
}

GgufBuilder& GgufBuilder::Scalar(std::string_view key, uint32_t type, uint64_t bits) {
  std::vector<std::byte> v = U64Bytes(bits);
  v.resize(GgufScalarSize(type));
  return RawKv(Cat({Str(key), U32Bytes(type), v}));
}

GgufBuilder& GgufBuilder::String(std::string_view key, std::string_view value) {
  return RawKv(Cat({Str(key), U32Bytes(kGgufString), Str(value)}));
}

GgufBuilder& GgufBuilder::Array(std::string_view key, uint32_t elem_type, uint64_t count,
                                std::span<const std::byte> elems) {
  std::vector<std::byte> kv =
      Cat({Str(key), U32Bytes(kGgufArray), U32Bytes(elem_type), Count(count)});
  Append(&kv, elems);
  return RawKv(kv);
}

GgufBuilder& GgufBuilder::StringArray(std::string_view key,
                                      const std::vector<std::string>& values) {
  std::vector<std::byte> elems;
  for (const auto& v : values) Append(&elems, Str(v));
  return Array(key, kGgufString, values.size(), elems);
}

GgufBuilder& GgufBuilder::RawKv(std::span<const std::byte> bytes) {
  Append(&kvs_, bytes);
  if (count_kvs_) ++kv_count_;
  return *this;
}

GgufBuilder& GgufBuilder::Tensor(std::string_view name, const std::vector<uint64_t>& dims,
                                 uint32_t type, uint64_t offset) {
  std::vector<std::byte> info = Cat({Str(name), U32Bytes(static_cast<uint32_t>(dims.size()))});
  for (uint64_t d : dims) Append(&info, Count(d));
  Append(&info, U32Bytes(type));
  Append(&info, U64Bytes(offset));  // 64 bits in every version
  return RawTensor(info);
}

GgufBuilder& GgufBuilder::RawTensor(std::span<const std::byte> bytes) {
  Append(&infos_, bytes);
  if (count_tensors_) ++tensor_count_;
  return *this;
}

uint64_t GgufBuilder::HeadSize() const { return HeaderSize() + kvs_.size() + infos_.size(); }

std::vector<std::byte> GgufBuilder::Build(uint64_t alignment,
                                          std::span<const std::byte> data) const {
  std::vector<std::byte> out =
      Cat({U32Bytes(magic_), U32Bytes(version_), Count(tensor_count_), Count(kv_count_)});
  Append(&out, kvs_);
  Append(&out, infos_);
  out.resize((out.size() + alignment - 1) / alignment * alignment);
  Append(&out, data);
  return out;
}

}  // namespace loadbench::test
