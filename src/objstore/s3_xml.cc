#include "objstore/s3_xml.h"

#include <libxml/parser.h>
#include <libxml/tree.h>

#include <charconv>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>

namespace shale::objstore::s3xml {
namespace {

constexpr size_t kMaxDocument = 64u << 20;  // no S3 response we parse is anywhere near this

Error garbled(const std::string& what) {
  return Error::make(Errc::kCorruption, "malformed S3 response: " + what, true);
}

struct DocDeleter {
  void operator()(xmlDoc* d) const { xmlFreeDoc(d); }
};
using Doc = std::unique_ptr<xmlDoc, DocDeleter>;

Result<Doc> parse(std::string_view xml) {
  static std::once_flag once;
  std::call_once(once, [] { xmlInitParser(); });
  if (xml.empty()) return garbled("empty body");
  if (xml.size() > kMaxDocument) return garbled("document too large");
  xmlDoc* d = xmlReadMemory(xml.data(), static_cast<int>(xml.size()), "s3.xml", nullptr,
                            XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
  if (d == nullptr || xmlDocGetRootElement(d) == nullptr) {
    if (d) xmlFreeDoc(d);
    return garbled("not well-formed XML");
  }
  return Doc(d);
}

bool is(const xmlNode* n, const char* name) {
  return n->type == XML_ELEMENT_NODE &&
         std::strcmp(reinterpret_cast<const char*>(n->name), name) == 0;
}

std::string text_of(const xmlNode* n) {
  std::string out;
  for (const xmlNode* c = n->children; c; c = c->next) {
    if ((c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE) && c->content) {
      out += reinterpret_cast<const char*>(c->content);
    }
  }
  return out;
}

const xmlNode* child(const xmlNode* n, const char* name) {
  for (const xmlNode* c = n->children; c; c = c->next) {
    if (is(c, name)) return c;
  }
  return nullptr;
}

bool parse_u64(const std::string& s, uint64_t* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

ErrorInfo error_fields(const xmlNode* n) {
  ErrorInfo e;
  if (auto* c = child(n, "Code")) e.code = text_of(c);
  if (auto* c = child(n, "Message")) e.message = text_of(c);
  if (auto* c = child(n, "Key")) e.key = text_of(c);
  return e;
}

}  // namespace

int64_t parse_iso8601_ms(std::string_view s) {
  // YYYY-MM-DDTHH:MM:SS[.fff]Z
  if (s.size() < 20) return -1;
  auto num = [&](size_t pos, size_t len, int* out) {
    auto [p, ec] = std::from_chars(s.data() + pos, s.data() + pos + len, *out);
    return ec == std::errc() && p == s.data() + pos + len;
  };
  int Y, M, D, h, m, sec;
  if (!num(0, 4, &Y) || s[4] != '-' || !num(5, 2, &M) || s[7] != '-' || !num(8, 2, &D) ||
      s[10] != 'T' || !num(11, 2, &h) || s[13] != ':' || !num(14, 2, &m) || s[16] != ':' ||
      !num(17, 2, &sec)) {
    return -1;
  }
  if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60) return -1;
  int ms = 0;
  size_t pos = 19;
  if (pos < s.size() && s[pos] == '.') {
    int scale = 100;
    for (++pos; pos < s.size() && s[pos] >= '0' && s[pos] <= '9'; ++pos) {
      ms += (s[pos] - '0') * scale;
      scale /= 10;
    }
  }
  struct tm t {};
  t.tm_year = Y - 1900;
  t.tm_mon = M - 1;
  t.tm_mday = D;
  t.tm_hour = h;
  t.tm_min = m;
  t.tm_sec = sec;
  return static_cast<int64_t>(timegm(&t)) * 1000 + ms;
}

Result<ListPage> parse_list_objects_v2(std::string_view xml) {
  auto doc = parse(xml);
  if (!doc.ok()) return std::move(doc).error();
  const xmlNode* root = xmlDocGetRootElement(doc->get());
  if (!is(root, "ListBucketResult")) return garbled("expected ListBucketResult");
  ListPage page;
  for (const xmlNode* c = root->children; c; c = c->next) {
    if (is(c, "IsTruncated")) {
      page.truncated = text_of(c) == "true";
    } else if (is(c, "NextContinuationToken")) {
      page.next_token = text_of(c);
    } else if (is(c, "Contents")) {
      ObjectInfo o;
      const xmlNode* k = child(c, "Key");
      const xmlNode* sz = child(c, "Size");
      if (!k || !sz) return garbled("Contents without Key or Size");
      o.key = text_of(k);
      if (o.key.empty()) return garbled("empty Key");
      if (!parse_u64(text_of(sz), &o.size)) return garbled("bad Size for " + o.key);
      if (const xmlNode* lm = child(c, "LastModified")) {
        o.mtime_ms = parse_iso8601_ms(text_of(lm));
        if (o.mtime_ms < 0) o.mtime_ms = 0;
      }
      page.objects.push_back(std::move(o));
    }
  }
  if (page.truncated && page.next_token.empty()) {
    return garbled("IsTruncated without NextContinuationToken");
  }
  return page;
}

bool is_error_document(std::string_view xml) {
  auto doc = parse(xml);
  return doc.ok() && is(xmlDocGetRootElement(doc->get()), "Error");
}

Result<ErrorInfo> parse_error(std::string_view xml) {
  auto doc = parse(xml);
  if (!doc.ok()) return std::move(doc).error();
  const xmlNode* root = xmlDocGetRootElement(doc->get());
  if (!is(root, "Error")) return garbled("expected Error");
  ErrorInfo e = error_fields(root);
  if (e.code.empty()) return garbled("Error without Code");
  return e;
}

Result<std::string> parse_initiate_multipart(std::string_view xml) {
  auto doc = parse(xml);
  if (!doc.ok()) return std::move(doc).error();
  const xmlNode* root = xmlDocGetRootElement(doc->get());
  if (!is(root, "InitiateMultipartUploadResult")) {
    return garbled("expected InitiateMultipartUploadResult");
  }
  const xmlNode* id = child(root, "UploadId");
  if (!id || text_of(id).empty()) return garbled("no UploadId");
  return text_of(id);
}

Result<std::vector<ErrorInfo>> parse_delete_result(std::string_view xml) {
  auto doc = parse(xml);
  if (!doc.ok()) return std::move(doc).error();
  const xmlNode* root = xmlDocGetRootElement(doc->get());
  if (!is(root, "DeleteResult")) return garbled("expected DeleteResult");
  std::vector<ErrorInfo> errors;
  for (const xmlNode* c = root->children; c; c = c->next) {
    if (is(c, "Error")) errors.push_back(error_fields(c));
  }
  return errors;
}

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      case '\r':
        out += "&#13;";
        break;
      case '\n':
        out += "&#10;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string build_delete_request(const std::vector<std::string>& keys) {
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Delete><Quiet>true</Quiet>";
  for (const auto& k : keys) x += "<Object><Key>" + escape(k) + "</Key></Object>";
  x += "</Delete>";
  return x;
}

std::string build_complete_multipart(const std::vector<std::pair<int, std::string>>& parts) {
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CompleteMultipartUpload>";
  for (const auto& [n, etag] : parts) {
    x += "<Part><PartNumber>" + std::to_string(n) + "</PartNumber><ETag>" + escape(etag) +
         "</ETag></Part>";
  }
  x += "</CompleteMultipartUpload>";
  return x;
}

}  // namespace shale::objstore::s3xml
