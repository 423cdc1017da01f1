// A forward-only JSON writer into one growing buffer, for the answers that carry bulk
// (skill_file, resources/read) and the cached lists (docs/performance.md). Its output
// is byte for byte nlohmann::json's dump(-1, ' ', false, replace) of the same values, which
// the tests (tests/unit/tools/json_writer_test.cc) hold it to.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace skillmcp {

class JsonWriter {
 public:
  // levels 1: plain JSON text. levels 2: that text escaped as the inside of a JSON string,
  // written in the same pass, so a tool payload goes straight into the JSON-RPC line.
  JsonWriter(std::string* out, int levels) : out_(out), levels_(levels) {}

  void BeginObject() { Open('{'); }
  void EndObject() { Close('}'); }
  void BeginArray() { Open('['); }
  void EndArray() { Close(']'); }
  void Key(std::string_view key);
  // Invalid UTF-8 becomes U+FFFD exactly as nlohmann's replace handler writes it.
  void String(std::string_view value);
  // A string holding the base64 (RFC 4648, padded) of `bytes`, encoded in place.
  void Base64String(std::string_view bytes);
  void Uint(uint64_t value);
  void Bool(bool value);
  // A value already serialised as minified JSON text (escaped once more at levels 2).
  void Raw(std::string_view json);

 private:
  void Open(char bracket);
  void Close(char bracket);
  void BeforeValue();
  void Quote();
  void Escaped(std::string_view s);

  std::string* out_;
  int levels_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
  bool after_key_ = false;
};

// nlohmann's own minified text of `value` (replace handler), the form every answer uses.
std::string DumpJson(const nlohmann::ordered_json& value);

}  // namespace skillmcp
