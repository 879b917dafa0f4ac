#include "perf/schema_registry.h"

#include <curl/curl.h>
#include <jansson.h>

#include <memory>

namespace shale::perf {
namespace {

size_t append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// Subjects may hold characters that are not URL-safe (topic names have '.', '_', '-' only,
// but the registry treats the subject as a path segment, so escape it anyway).
std::string escape(CURL* curl, const std::string& s) {
  char* e = curl_easy_escape(curl, s.data(), static_cast<int>(s.size()));
  std::string out = e != nullptr ? e : s;
  curl_free(e);
  return out;
}

}  // namespace

SchemaRegistryConfig schema_registry_config(const std::map<std::string, std::string>& producer) {
  SchemaRegistryConfig c;
  auto it = producer.find("schema.registry.url");
  if (it == producer.end() || it->second.empty()) {
    throw SchemaRegistryError(
        "--value-schema needs the schema registry: add -P schema.registry.url=http://HOST:PORT");
  }
  c.url = it->second.substr(0, it->second.find(','));
  while (!c.url.empty() && c.url.back() == '/') c.url.pop_back();
  auto src = producer.find("basic.auth.credentials.source");
  auto info = producer.find("basic.auth.user.info");
  if (src != producer.end() && src->second != "USER_INFO") {
    throw SchemaRegistryError("basic.auth.credentials.source=" + src->second +
                              ": shale perf supports only USER_INFO");
  }
  if (info != producer.end()) c.user_info = info->second;
  return c;
}

int32_t register_schema(const SchemaRegistryConfig& cfg, const std::string& subject,
                        const std::string& schema_json) {
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) throw SchemaRegistryError("schema registry: curl_easy_init failed");
  std::unique_ptr<json_t, void (*)(json_t*)> req(json_pack("{s:s}", "schema", schema_json.c_str()),
                                                 json_decref);
  std::unique_ptr<char, void (*)(void*)> body(json_dumps(req.get(), JSON_COMPACT), free);
  const std::string url = cfg.url + "/subjects/" + escape(curl.get(), subject) + "/versions";
  std::string answer;
  curl_slist* headers =
      curl_slist_append(nullptr, "Content-Type: application/vnd.schemaregistry.v1+json");
  headers = curl_slist_append(headers, "Accept: application/vnd.schemaregistry.v1+json");
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> hold(headers, curl_slist_free_all);
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.get());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &answer);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  if (!cfg.user_info.empty()) {
    curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    curl_easy_setopt(c, CURLOPT_USERPWD, cfg.user_info.c_str());
  }
  CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK) {
    throw SchemaRegistryError("schema registry " + url + ": " + curl_easy_strerror(rc));
  }
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  json_error_t err;
  std::unique_ptr<json_t, void (*)(json_t*)> j(json_loads(answer.c_str(), 0, &err), json_decref);
  json_t* id = j ? json_object_get(j.get(), "id") : nullptr;
  if (status != 200 || id == nullptr || !json_is_integer(id)) {
    throw SchemaRegistryError("schema registry " + url + " answered " + std::to_string(status) +
                              ": " + answer.substr(0, 300));
  }
  return static_cast<int32_t>(json_integer_value(id));
}

}  // namespace shale::perf
