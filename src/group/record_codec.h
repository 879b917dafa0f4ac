// Byte formats of the values a GroupStore keeps (group metadata and committed offsets) and the
// MetaStore key layout used by MetaGroupStore. Documented in docs/groups.md; every value starts
// with a big-endian int16 format version so that later versions can add fields.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "group/group_store.h"

namespace shale::group::codec {

std::string encode_group(const GroupRecord& g);
Result<GroupRecord> decode_group(std::string_view group_id, std::string_view bytes);

std::string encode_offset(const OffsetValue& v);
Result<OffsetValue> decode_offset(std::string_view bytes);

// Key components are escaped so that '/' never appears inside one: bytes outside
// [A-Za-z0-9._-] become %XX (upper-case hex).
std::string escape(std::string_view s);
Result<std::string> unescape(std::string_view s);

// Keys under `root` (e.g. "groups/"):
//   <root><escaped group>/meta
//   <root><escaped group>/offsets/<escaped topic>/<partition>
std::string group_prefix(std::string_view root, std::string_view group_id);
std::string meta_key(std::string_view root, std::string_view group_id);
std::string offset_key(std::string_view root, std::string_view group_id, std::string_view topic,
                       int32_t partition);

struct ParsedKey {
  std::string group_id;
  bool is_meta = false;
  std::string topic;  // offset keys only
  int32_t partition = 0;
};
Result<ParsedKey> parse_key(std::string_view root, std::string_view key);

}  // namespace shale::group::codec
