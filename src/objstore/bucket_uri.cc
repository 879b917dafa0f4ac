#include "objstore/bucket_uri.h"

#include <cctype>
#include <charconv>
#include <set>

namespace shale::objstore {
namespace {

Error bad(std::string_view uri, const std::string& why) {
  return Error::make(Errc::kInvalidArgument,
                     "malformed bucket URI '" + std::string(uri) + "': " + why);
}

int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool valid_bucket_name(std::string_view b) {
  // S3's rules are stricter (3-63 lower-case chars); S3-compatible servers accept more, so
  // only what cannot appear in a host name or path segment is refused here.
  if (b.empty() || b.size() > 255) return false;
  for (char c : b) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')) {
      return false;
    }
  }
  return true;
}

Result<bool> parse_bool(std::string_view uri, const std::string& key, const std::string& v) {
  std::string l;
  for (char c : v) l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l == "true") return true;
  if (l == "false" || l.empty()) return false;
  return bad(uri, key + " must be true or false, not '" + v + "'");
}

}  // namespace

Result<std::string> percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) {
      return Error::make(Errc::kInvalidArgument, "truncated percent escape");
    }
    int hi = hexval(s[i + 1]), lo = hexval(s[i + 2]);
    if (hi < 0 || lo < 0) return Error::make(Errc::kInvalidArgument, "bad percent escape");
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

std::string BucketUri::to_string() const {
  std::string s = std::to_string(id) + "@";
  switch (scheme) {
    case Scheme::kMemory:
      return s + "memory://";
    case Scheme::kFile:
      return s + "file://" + path;
    case Scheme::kS3:
      break;
  }
  s += "s3://" + bucket;
  char sep = '?';
  auto add = [&](const std::string& k, const std::string& v) {
    if (v.empty()) return;
    s += sep + k + "=" + v;
    sep = '&';
  };
  add("region", region);
  add("endpoint", endpoint);
  if (path_style) add("pathStyle", "true");
  add("accessKey", access_key);
  if (!secret_key.empty()) add("secretKey", "******");
  if (!session_token.empty()) add("sessionToken", "******");
  for (const auto& [k, v] : params) add(k, v);
  return s;
}

Result<BucketUri> parse_bucket_uri(std::string_view text) {
  BucketUri u;
  std::string_view rest = text;
  // Optional "<id>@". An '@' after "://" belongs to the URI (it cannot, in ours), so only a
  // prefix of digits counts.
  if (size_t at = rest.find('@'); at != std::string_view::npos && at < rest.find("://")) {
    std::string_view id = rest.substr(0, at);
    int v = 0;
    auto [p, ec] = std::from_chars(id.data(), id.data() + id.size(), v);
    if (ec != std::errc() || p != id.data() + id.size() || v < -32768 || v > 32767) {
      return bad(text, "bucket id '" + std::string(id) + "' is not a 16-bit integer");
    }
    u.id = v;
    rest.remove_prefix(at + 1);
  }
  size_t colon = rest.find("://");
  if (colon == std::string_view::npos) return bad(text, "expected <scheme>://");
  std::string_view scheme = rest.substr(0, colon);
  rest.remove_prefix(colon + 3);
  std::string_view query;
  if (size_t q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }

  if (scheme == "memory" || scheme == "mem") {
    u.scheme = Scheme::kMemory;
  } else if (scheme == "file") {
    u.scheme = Scheme::kFile;
    auto p = percent_decode(rest);
    if (!p.ok()) return bad(text, p.error().message);
    u.path = std::move(p).value();
    if (u.path.empty() || u.path[0] != '/') {
      return bad(text, "file URIs need an absolute path (file:///abs/dir)");
    }
    while (u.path.size() > 1 && u.path.back() == '/') u.path.pop_back();
  } else if (scheme == "s3") {
    u.scheme = Scheme::kS3;
    u.bucket = std::string(rest);
    if (!u.bucket.empty() && u.bucket.back() == '/') u.bucket.pop_back();
    if (!valid_bucket_name(u.bucket)) {
      return bad(text, "bucket name '" + u.bucket + "' is empty or has invalid characters");
    }
  } else {
    return bad(text, "unknown scheme '" + std::string(scheme) + "' (s3, file, memory)");
  }

  std::set<std::string> seen;
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view kv = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (kv.empty()) continue;
    size_t eq = kv.find('=');
    auto k = percent_decode(kv.substr(0, eq));
    auto v = percent_decode(eq == std::string_view::npos ? "" : kv.substr(eq + 1));
    if (!k.ok() || !v.ok()) return bad(text, "bad percent escape in query");
    std::string key = std::move(k).value(), val = std::move(v).value();
    if (key.empty()) return bad(text, "empty query parameter name");
    if (!seen.insert(key).second) return bad(text, "parameter '" + key + "' given twice");
    if (key == "region") {
      u.region = val;
    } else if (key == "endpoint") {
      if (!val.empty() && val.rfind("http://", 0) != 0 && val.rfind("https://", 0) != 0) {
        return bad(text, "endpoint must start with http:// or https://");
      }
      while (!val.empty() && val.back() == '/') val.pop_back();
      u.endpoint = val;
    } else if (key == "pathStyle") {
      auto b = parse_bool(text, key, val);
      if (!b.ok()) return std::move(b).error();
      u.path_style = *b;
    } else if (key == "accessKey") {
      u.access_key = val;
    } else if (key == "secretKey") {
      u.secret_key = val;
    } else if (key == "sessionToken") {
      u.session_token = val;
    } else {
      u.params[key] = val;
    }
  }
  if (u.access_key.empty() != u.secret_key.empty()) {
    return bad(text, "accessKey and secretKey must be given together");
  }
  return u;
}

Result<std::vector<BucketUri>> parse_bucket_list(std::string_view text) {
  // Split on commas that start a new "<id>@scheme://" entry, so a comma inside a query value
  // of the previous entry stays where it is.
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string_view piece = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    auto trimmed = piece;
    while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.front()))) {
      trimmed.remove_prefix(1);
    }
    while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.back()))) {
      trimmed.remove_suffix(1);
    }
    bool new_entry = parts.empty() || trimmed.find("://") != std::string_view::npos;
    if (new_entry) {
      parts.emplace_back(trimmed);
    } else {
      parts.back() += ",";
      parts.back() += std::string(piece);
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  std::vector<BucketUri> out;
  std::set<int> ids;
  for (const auto& p : parts) {
    if (p.empty()) return bad(text, "empty entry in bucket list");
    auto u = parse_bucket_uri(p);
    if (!u.ok()) return std::move(u).error();
    if (!ids.insert(u->id).second) {
      return bad(text, "bucket id " + std::to_string(u->id) + " used twice");
    }
    out.push_back(std::move(u).value());
  }
  return out;
}

}  // namespace shale::objstore
