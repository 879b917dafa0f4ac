// A minimal ordered JSON tree and a writer reproducing Jackson's DefaultPrettyPrinter layout,
// which is what AutoMQ's result file looks like: 2-space indented objects, `"key" : value`,
// arrays on one line as `[ a, b ]`, empty containers as `[ ]` / `{ }`, doubles in Java
// Double.toString form. Values are built by one thread and then written; no sharing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace shale::perf {

class Json {
 public:
  using Object = std::vector<std::pair<std::string, Json>>;
  using Array = std::vector<Json>;

  Json() : v_(nullptr) {}
  static Json null() { return Json(); }
  static Json boolean(bool b) { return Json(b); }
  static Json integer(int64_t i) { return Json(i); }
  static Json number(double d) { return Json(d); }
  static Json string(std::string s) { return Json(std::move(s)); }
  static Json object() { return Json(Object{}); }
  static Json array() { return Json(Array{}); }

  // Objects: appends a key (keys keep insertion order). Arrays: appends an element.
  Json& set(std::string key, Json value);
  Json& push(Json value);

  // Jackson DefaultPrettyPrinter output (no trailing newline).
  std::string pretty() const;

 private:
  template <typename T>
  explicit Json(T v) : v_(std::move(v)) {}
  void write(std::string* out, int depth) const;
  std::variant<std::nullptr_t, bool, int64_t, double, std::string, Object, Array> v_;
};

std::string json_quote(const std::string& s);

}  // namespace shale::perf
