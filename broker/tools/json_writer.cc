#include "broker/tools/json_writer.h"

#include <charconv>

#include "shared/base64.h"
#include "shared/json_escape.h"
#include "shared/utf8.h"

namespace skillmcp {

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_->push_back(',');
    first_.back() = false;
  }
}

void JsonWriter::Open(char bracket) {
  BeforeValue();
  out_->push_back(bracket);
  first_.push_back(true);
}

void JsonWriter::Close(char bracket) {
  out_->push_back(bracket);
  first_.pop_back();
}

void JsonWriter::Quote() {
  if (levels_ >= 2) out_->push_back('\\');
  out_->push_back('"');
}

void JsonWriter::Escaped(std::string_view s) {
  if (IsValidUtf8(s)) return AppendJsonEscaped(out_, s, levels_);
  // Rare: let nlohmann decide the replacement characters, so the bytes stay its own.
  std::string once = nlohmann::json(std::string(s)).dump(-1, ' ', false,
                                                         nlohmann::json::error_handler_t::replace);
  std::string_view inner(once);
  inner = inner.substr(1, inner.size() - 2);
  if (levels_ >= 2) return AppendJsonEscaped(out_, inner, 1);
  out_->append(inner);
}

void JsonWriter::Key(std::string_view key) {
  BeforeValue();
  Quote();
  Escaped(key);
  Quote();
  out_->push_back(':');
  after_key_ = true;
}

void JsonWriter::String(std::string_view value) {
  BeforeValue();
  Quote();
  Escaped(value);
  Quote();
}

// The base64 alphabet needs no escaping at any level: it is encoded straight into the
// buffer.
void JsonWriter::Base64String(std::string_view bytes) {
  BeforeValue();
  Quote();
  AppendBase64(out_, bytes);
  Quote();
}

void JsonWriter::Uint(uint64_t value) {
  BeforeValue();
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  out_->append(buf, end);
}

void JsonWriter::Bool(bool value) {
  BeforeValue();
  out_->append(value ? "true" : "false");
}

void JsonWriter::Raw(std::string_view json) {
  BeforeValue();
  if (levels_ >= 2) return AppendJsonEscaped(out_, json, 1);
  out_->append(json);
}

std::string DumpJson(const nlohmann::ordered_json& value) {
  return value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace skillmcp
