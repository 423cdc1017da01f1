// Standard base64 (RFC 4648 §4, padded), appended to a buffer.
#pragma once

#include <string>
#include <string_view>

namespace skillmcp {

// Appends the base64 of `bytes` to `out`. Table-driven: file contents are not secrets
// from the client they are sent to, so the constant-time encoder of libsodium (about 70
// instructions a byte, tests/bench/README.md) buys nothing here.
void AppendBase64(std::string* out, std::string_view bytes);

}  // namespace skillmcp
