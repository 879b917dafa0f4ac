#include "group/record_codec.h"

#include <charconv>

#include "group/byte_io.h"

namespace shale::group::codec {
namespace {

constexpr int16_t kGroupFormat = 0;
constexpr int16_t kOffsetFormat = 0;

Error corrupt(std::string what) { return Error::make(Errc::kCorruption, std::move(what)); }

bool plain(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string encode_group(const GroupRecord& g) {
  io::Writer w;
  w.i16(kGroupFormat);
  w.nullable(g.protocol_type);
  w.i32(g.generation);
  w.nullable(g.protocol_name);
  w.nullable(g.leader);
  w.i64(g.state_timestamp_ms);
  w.i32(static_cast<int32_t>(g.members.size()));
  for (const auto& m : g.members) {
    w.bytes(m.member_id);
    w.nullable(m.group_instance_id);
    w.bytes(m.client_id);
    w.bytes(m.client_host);
    w.i32(m.rebalance_timeout_ms);
    w.i32(m.session_timeout_ms);
    w.bytes(m.subscription);
    w.bytes(m.assignment);
  }
  return std::move(w).take();
}

Result<GroupRecord> decode_group(std::string_view group_id, std::string_view bytes) {
  io::Reader r(bytes);
  GroupRecord g;
  g.group_id = std::string(group_id);
  int16_t format = -1;
  int32_t n = 0;
  r.i16(format);
  if (r.ok() && format != kGroupFormat) {
    return corrupt("group record format " + std::to_string(format) + " is unknown");
  }
  r.nullable(g.protocol_type);
  r.i32(g.generation);
  r.nullable(g.protocol_name);
  r.nullable(g.leader);
  r.i64(g.state_timestamp_ms);
  r.i32(n);
  if (!r.ok() || n < 0) return corrupt("group record of " + std::string(group_id) + " truncated");
  for (int32_t i = 0; i < n && r.ok(); ++i) {
    StoredMember m;
    r.bytes(m.member_id);
    r.nullable(m.group_instance_id);
    r.bytes(m.client_id);
    r.bytes(m.client_host);
    r.i32(m.rebalance_timeout_ms);
    r.i32(m.session_timeout_ms);
    r.bytes(m.subscription);
    r.bytes(m.assignment);
    g.members.push_back(std::move(m));
  }
  if (!r.ok() || !r.at_end()) {
    return corrupt("group record of " + std::string(group_id) + " is malformed");
  }
  return g;
}

std::string encode_offset(const OffsetValue& v) {
  io::Writer w;
  w.i16(kOffsetFormat);
  w.i64(v.offset);
  w.i32(v.leader_epoch);
  w.bytes(v.metadata);
  w.i64(v.commit_timestamp_ms);
  w.i64(v.expire_timestamp_ms.value_or(-1));
  return std::move(w).take();
}

Result<OffsetValue> decode_offset(std::string_view bytes) {
  io::Reader r(bytes);
  OffsetValue v;
  int16_t format = -1;
  int64_t expire = -1;
  r.i16(format);
  if (r.ok() && format != kOffsetFormat) {
    return corrupt("offset record format " + std::to_string(format) + " is unknown");
  }
  r.i64(v.offset);
  r.i32(v.leader_epoch);
  r.bytes(v.metadata);
  r.i64(v.commit_timestamp_ms);
  r.i64(expire);
  if (!r.ok() || !r.at_end()) return corrupt("offset record is malformed");
  if (expire >= 0) v.expire_timestamp_ms = expire;
  return v;
}

std::string escape(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (plain(c)) {
      out.push_back(c);
    } else {
      auto b = static_cast<unsigned char>(c);
      out.push_back('%');
      out.push_back(kHex[b >> 4]);
      out.push_back(kHex[b & 15]);
    }
  }
  return out;
}

Result<std::string> unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size()) return corrupt("bad escape in key");
    int hi = hex_value(s[i + 1]);
    int lo = hex_value(s[i + 2]);
    if (hi < 0 || lo < 0) return corrupt("bad escape in key");
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

std::string group_prefix(std::string_view root, std::string_view group_id) {
  return std::string(root) + escape(group_id) + "/";
}

std::string meta_key(std::string_view root, std::string_view group_id) {
  return group_prefix(root, group_id) + "meta";
}

std::string offset_key(std::string_view root, std::string_view group_id, std::string_view topic,
                       int32_t partition) {
  return group_prefix(root, group_id) + "offsets/" + escape(topic) + "/" +
         std::to_string(partition);
}

Result<ParsedKey> parse_key(std::string_view root, std::string_view key) {
  if (key.substr(0, root.size()) != root) return corrupt("key outside the group root");
  std::string_view rest = key.substr(root.size());
  size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return corrupt("group key without a kind");
  ParsedKey k;
  auto g = unescape(rest.substr(0, slash));
  if (!g.ok()) return std::move(g).error();
  k.group_id = std::move(*g);
  rest = rest.substr(slash + 1);
  if (rest == "meta") {
    k.is_meta = true;
    return k;
  }
  constexpr std::string_view kOffsets = "offsets/";
  if (rest.substr(0, kOffsets.size()) != kOffsets) return corrupt("unknown group key kind");
  rest = rest.substr(kOffsets.size());
  slash = rest.find('/');
  if (slash == std::string_view::npos) return corrupt("offset key without a partition");
  auto t = unescape(rest.substr(0, slash));
  if (!t.ok()) return std::move(t).error();
  k.topic = std::move(*t);
  std::string_view p = rest.substr(slash + 1);
  auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), k.partition);
  if (ec != std::errc() || end != p.data() + p.size() || p.empty()) {
    return corrupt("offset key with a bad partition");
  }
  return k;
}

}  // namespace shale::group::codec
