#include "perf/json.h"

#include <cstdio>

#include "perf/number_format.h"

namespace shale::perf {

Json& Json::set(std::string key, Json value) {
  std::get<Object>(v_).emplace_back(std::move(key), std::move(value));
  return *this;
}

Json& Json::push(Json value) {
  std::get<Array>(v_).push_back(std::move(value));
  return *this;
}

std::string json_quote(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        o += "\\\"";
        break;
      case '\\':
        o += "\\\\";
        break;
      case '\n':
        o += "\\n";
        break;
      case '\r':
        o += "\\r";
        break;
      case '\t':
        o += "\\t";
        break;
      case '\b':
        o += "\\b";
        break;
      case '\f':
        o += "\\f";
        break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04X", c);
          o += b;
        } else {
          o.push_back(static_cast<char>(c));
        }
    }
  }
  return o + "\"";
}

void Json::write(std::string* out, int depth) const {
  if (std::holds_alternative<std::nullptr_t>(v_)) {
    *out += "null";
  } else if (auto* b = std::get_if<bool>(&v_)) {
    *out += *b ? "true" : "false";
  } else if (auto* i = std::get_if<int64_t>(&v_)) {
    *out += std::to_string(*i);
  } else if (auto* d = std::get_if<double>(&v_)) {
    *out += java_double(*d);
  } else if (auto* s = std::get_if<std::string>(&v_)) {
    *out += json_quote(*s);
  } else if (auto* a = std::get_if<Array>(&v_)) {
    if (a->empty()) {
      *out += "[ ]";
      return;
    }
    *out += "[ ";
    for (size_t k = 0; k < a->size(); ++k) {
      if (k) *out += ", ";
      (*a)[k].write(out, depth);
    }
    *out += " ]";
  } else if (auto* o = std::get_if<Object>(&v_)) {
    if (o->empty()) {
      *out += "{ }";
      return;
    }
    *out += "{\n";
    std::string indent(static_cast<size_t>(depth + 1) * 2, ' ');
    for (size_t k = 0; k < o->size(); ++k) {
      if (k) *out += ",\n";
      out->append(indent);
      out->append(json_quote((*o)[k].first));
      out->append(" : ");
      (*o)[k].second.write(out, depth + 1);
    }
    out->push_back('\n');
    out->append(static_cast<size_t>(depth) * 2, ' ');
    out->push_back('}');
  }
}

std::string Json::pretty() const {
  std::string out;
  write(&out, 0);
  return out;
}

}  // namespace shale::perf
