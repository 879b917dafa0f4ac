#include "cluster/model.h"

#include <charconv>
#include <nlohmann/json.hpp>

namespace shale::cluster {

namespace {
std::optional<int32_t> parse_int(std::string_view s) {
  int32_t v = 0;
  if (s.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}
}  // namespace

std::optional<std::pair<std::string, int32_t>> Keys::parse_assign(std::string_view key) const {
  std::string pre = assign_prefix();
  if (key.substr(0, pre.size()) != pre) return std::nullopt;
  key.remove_prefix(pre.size());
  size_t slash = key.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return std::nullopt;
  auto p = parse_int(key.substr(slash + 1));
  if (!p || *p < 0) return std::nullopt;
  return std::make_pair(std::string(key.substr(0, slash)), *p);
}

std::optional<int32_t> Keys::parse_broker(std::string_view key) const {
  std::string pre = brokers_prefix();
  if (key.substr(0, pre.size()) != pre) return std::nullopt;
  return parse_int(key.substr(pre.size()));
}

std::string to_json(const BrokerInfo& b) {
  nlohmann::json j;
  j["id"] = b.id;
  j["listeners"] = b.listeners;
  j["rack"] = b.rack;
  j["wal"] = b.wal_uri;
  j["node_epoch"] = b.node_epoch;
  j["start_time_ms"] = b.start_time_ms;
  return j.dump();
}

Result<BrokerInfo> broker_from_json(std::string_view json) {
  auto j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return Error::make(Errc::kCorruption, "broker record is not a JSON object");
  try {
    BrokerInfo b;
    b.id = j.at("id").get<int32_t>();
    b.listeners = j.at("listeners").get<std::map<std::string, std::string>>();
    b.rack = j.value("rack", "");
    b.wal_uri = j.value("wal", "");
    b.node_epoch = j.at("node_epoch").get<int64_t>();
    b.start_time_ms = j.value("start_time_ms", int64_t{0});
    return b;
  } catch (const nlohmann::json::exception& e) {
    return Error::make(Errc::kCorruption, std::string("broker record: ") + e.what());
  }
}

std::string to_json(const Assignment& a) {
  nlohmann::json j;
  j["owner"] = a.owner;
  j["leader_epoch"] = a.leader_epoch;
  j["state"] = a.state == Assignment::State::kOwned    ? "OWNED"
               : a.state == Assignment::State::kMoving ? "MOVING"
                                                       : "RELEASED";
  if (a.state != Assignment::State::kOwned) j["target"] = a.target;
  j["since_ms"] = a.since_ms;
  return j.dump();
}

Result<Assignment> assignment_from_json(std::string_view json) {
  auto j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return Error::make(Errc::kCorruption, "assignment is not a JSON object");
  try {
    Assignment a;
    a.owner = j.at("owner").get<int32_t>();
    a.leader_epoch = j.at("leader_epoch").get<int32_t>();
    std::string st = j.at("state").get<std::string>();
    if (st == "OWNED") {
      a.state = Assignment::State::kOwned;
    } else if (st == "MOVING" || st == "RELEASED") {
      a.state = st == "MOVING" ? Assignment::State::kMoving : Assignment::State::kReleased;
      a.target = j.at("target").get<int32_t>();
    } else {
      return Error::make(Errc::kCorruption, "assignment state '" + st + "'");
    }
    a.since_ms = j.value("since_ms", int64_t{0});
    return a;
  } catch (const nlohmann::json::exception& e) {
    return Error::make(Errc::kCorruption, std::string("assignment: ") + e.what());
  }
}

}  // namespace shale::cluster
