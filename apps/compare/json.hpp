#pragma once
// A single-line JSON object writer: enough for JSON lines of flat records.

#include <cmath>
#include <cstdio>
#include <string>

namespace kbench::compare {

class JsonObject {
 public:
  JsonObject& add(const std::string& key, const std::string& value) {
    return raw(key, quote(value));
  }
  JsonObject& add(const std::string& key, const char* value) {
    return add(key, std::string(value));
  }
  JsonObject& add(const std::string& key, double value) {
    if (!std::isfinite(value)) return raw(key, "null");
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", value);
    return raw(key, text);
  }
  JsonObject& add(const std::string& key, int value) { return raw(key, std::to_string(value)); }
  std::string str() const { return "{" + body_ + "}"; }

 private:
  JsonObject& raw(const std::string& key, const std::string& value) {
    if (!body_.empty()) body_ += ", ";
    body_ += quote(key) + ": " + value;
    return *this;
  }
  static std::string quote(const std::string& s) {
    std::string out = "\"";
    for (const char c : s) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        char escaped[8];
        std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
        out += escaped;
      } else {
        out += c;
      }
    }
    return out + "\"";
  }
  std::string body_;
};

}  // namespace kbench::compare
