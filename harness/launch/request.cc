#include "harness/launch/request.h"

#include <fmt/format.h>

namespace loadbench {
namespace {

using Json = nlohmann::ordered_json;

// j[key] into *v when it holds a value of v's type; kBadInput naming the key otherwise.
template <typename T>
Status Take(const Json& j, const char* key, T* v) {
  const auto it = j.find(key);
  if (it == j.end()) return Status::BadInput(fmt::format("worker request: no {}", key));
  try {
    *v = it->get<T>();
  } catch (const Json::exception&) {
    return Status::BadInput(fmt::format("worker request: {}: {} is not a {}", key, it->dump(),
                                        std::is_same_v<T, std::string> ? "string" : "number"));
  }
  return Status::Ok();
}

// The reader's place: 0 <= k < n.
Status CheckPlace(const char* what, int k, int n) {
  if (n >= 1 && k >= 0 && k < n) return Status::Ok();
  return Status::BadInput(fmt::format("worker request: {} {} of {}", what, k, n));
}

}  // namespace

nlohmann::ordered_json RequestJson(const WorkerRequest& r) {
  return {{"file", r.file},
          {"strategy", ResolvedJson(r.strategy)},
          {"counters", r.counters},
          {"expect_checksum", r.expect_checksum ? Json(*r.expect_checksum) : Json(nullptr)},
          {"pattern", r.pattern.Text()},
          {"part", r.part},
          {"parts", r.parts},
          {"reader", r.reader},
          {"readers", r.readers},
          {"result_fd", r.result_fd},
          {"hold_fd", r.hold_fd},
          {"start_fd", r.start_fd},
          {"profile_ctl_fd", r.profile_ctl_fd},
          {"profile_ack_fd", r.profile_ack_fd}};
}

Status ReadWorkerRequest(const nlohmann::ordered_json& j, WorkerRequest* out) {
  if (!j.is_object()) return Status::BadInput("worker request: not a JSON object");
  WorkerRequest r;
  std::string pattern;
  LB_RETURN_IF_ERROR(Take(j, "file", &r.file));
  if (!j.contains("strategy")) return Status::BadInput("worker request: no strategy");
  LB_RETURN_IF_ERROR(ResolvedOf(j["strategy"], &r.strategy));
  LB_RETURN_IF_ERROR(Take(j, "counters", &r.counters));
  if (!j.contains("expect_checksum")) return Status::BadInput("worker request: no expect_checksum");
  if (!j["expect_checksum"].is_null()) {
    uint64_t sum = 0;
    LB_RETURN_IF_ERROR(Take(j, "expect_checksum", &sum));
    r.expect_checksum = sum;
  }
  LB_RETURN_IF_ERROR(Take(j, "pattern", &pattern));
  LB_RETURN_IF_ERROR(ParsePattern(pattern, &r.pattern));
  for (const auto& [key, v] : {std::pair{"part", &r.part},
                               {"parts", &r.parts},
                               {"reader", &r.reader},
                               {"readers", &r.readers},
                               {"result_fd", &r.result_fd},
                               {"hold_fd", &r.hold_fd},
                               {"start_fd", &r.start_fd},
                               {"profile_ctl_fd", &r.profile_ctl_fd},
                               {"profile_ack_fd", &r.profile_ack_fd}}) {
    LB_RETURN_IF_ERROR(Take(j, key, v));
  }
  LB_RETURN_IF_ERROR(CheckPlace("part", r.part, r.parts));
  LB_RETURN_IF_ERROR(CheckPlace("reader", r.reader, r.readers));
  *out = std::move(r);
  return Status::Ok();
}

}  // namespace loadbench
