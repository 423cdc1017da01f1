#include "broker/confirm/tokens.h"

#include <sodium.h>

#include <algorithm>
#include <cstring>

namespace skillmcp {
namespace {

constexpr size_t kNonceBytes = 16;
constexpr size_t kHashBytes = crypto_generichash_BYTES;  // 32
constexpr size_t kClaimsBytes = 1 + kNonceBytes + 8 + kHashBytes + kHashBytes;
constexpr size_t kMacBytes = crypto_auth_BYTES;
constexpr size_t kKeyBytes = crypto_auth_KEYBYTES;
constexpr size_t kNonceOffset = 1;
constexpr size_t kExpiryOffset = kNonceOffset + kNonceBytes;
constexpr size_t kToolOffset = kExpiryOffset + 8;
constexpr size_t kPayloadOffset = kToolOffset + kHashBytes;
constexpr int kVariant = sodium_base64_VARIANT_URLSAFE_NO_PADDING;
constexpr size_t kMaxTokenChars = 512;
// Longest accepted lifetime; the gate configuration caps lower still.
constexpr int64_t kMaxTtlSeconds = 366LL * 24 * 3600;
// crypto_kdf context: fixed, so one secret always derives the same confirmation key and
// never the key of another purpose.
constexpr char kKdfContext[crypto_kdf_CONTEXTBYTES + 1] = "skmcpcfm";
constexpr uint64_t kKdfSubkeyId = 1;

static_assert(kKeyBytes == 32, "crypto_auth key is 32 bytes");
static_assert(sizeof(kKdfContext) == crypto_kdf_CONTEXTBYTES + 1, "kdf context is 8 bytes");

void Hash(std::string_view data, unsigned char out[kHashBytes]) {
  crypto_generichash(out, kHashBytes, reinterpret_cast<const unsigned char*>(data.data()),
                     data.size(), nullptr, 0);
}

// The payload a token binds: the canonical willRun, a NUL (which the canonical JSON never
// holds), then the script's identity. Either changing changes the hash.
bool PayloadHash(const WillRun& will_run, unsigned char out[kHashBytes]) {
  std::optional<std::string> canonical = CanonicalWillRun(will_run);
  if (!canonical) return false;
  crypto_generichash_state state;
  crypto_generichash_init(&state, nullptr, 0, kHashBytes);
  crypto_generichash_update(&state, reinterpret_cast<const unsigned char*>(canonical->data()),
                            canonical->size());
  const unsigned char separator = 0;
  crypto_generichash_update(&state, &separator, 1);
  crypto_generichash_update(&state,
                            reinterpret_cast<const unsigned char*>(will_run.script_identity.data()),
                            will_run.script_identity.size());
  crypto_generichash_final(&state, out, kHashBytes);
  return true;
}

std::string Encode(const unsigned char* bin, size_t len) {
  std::string out(sodium_base64_ENCODED_LEN(len, kVariant), '\0');
  sodium_bin2base64(out.data(), out.size(), bin, len, kVariant);
  out.resize(out.size() - 1);  // drop the terminating NUL
  return out;
}

// Decodes exactly `len` bytes from the whole of `text`, in the one canonical spelling.
bool DecodeExact(std::string_view text, unsigned char* out, size_t len) {
  if (text.size() + 1 != sodium_base64_ENCODED_LEN(len, kVariant)) return false;
  size_t got = 0;
  const char* end = nullptr;
  if (sodium_base642bin(out, len, text.data(), text.size(), nullptr, &got, &end, kVariant) != 0) {
    return false;
  }
  if (got != len || end != text.data() + text.size()) return false;
  // Why re-encode: non-zero spare bits would give a second spelling of one token.
  return Encode(out, len) == text;
}

void PutBigEndian(int64_t value, unsigned char* out) {
  uint64_t v = static_cast<uint64_t>(value);
  for (int i = 7; i >= 0; --i) {
    out[i] = static_cast<unsigned char>(v & 0xff);
    v >>= 8;
  }
}

int64_t GetBigEndian(const unsigned char* in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | in[i];
  return static_cast<int64_t>(v);
}

}  // namespace

const char* TokenErrorCode(TokenVerdict verdict) {
  switch (verdict) {
    case TokenVerdict::kValid:
      return "";
    case TokenVerdict::kInvalid:
      return "TOKEN_INVALID";
    case TokenVerdict::kReused:
      return "TOKEN_REUSED";
    case TokenVerdict::kExpired:
    case TokenVerdict::kSpentSetFull:
    case TokenVerdict::kSharedFull:
      return "TOKEN_EXPIRED";
    case TokenVerdict::kDraftChanged:
      return "DRAFT_CHANGED";
    case TokenVerdict::kUnrecorded:
      return "SPEND_UNRECORDED";
  }
  return "TOKEN_INVALID";
}

bool ConfirmTokens::AllocateKey() {
  if (sodium_init() < 0) return false;
  // Why guarded memory: the key sits between guard pages, mlocked, and PROT_NONE except
  // while a MAC is computed; sodium_free wipes it.
  key_ = static_cast<unsigned char*>(sodium_malloc(kKeyBytes));
  return key_ != nullptr;
}

std::unique_ptr<ConfirmTokens> ConfirmTokens::CreateRandom() {
  std::unique_ptr<ConfirmTokens> tokens(new ConfirmTokens());
  if (!tokens->AllocateKey()) return nullptr;
  randombytes_buf(tokens->key_, kKeyBytes);
  if (sodium_mprotect_noaccess(tokens->key_) != 0) return nullptr;
  return tokens;
}

std::unique_ptr<ConfirmTokens> ConfirmTokens::CreateFromSecret(std::string_view secret) {
  std::unique_ptr<ConfirmTokens> tokens(new ConfirmTokens());
  if (!tokens->AllocateKey()) return nullptr;
  unsigned char master[crypto_kdf_KEYBYTES];
  crypto_generichash(master, sizeof master, reinterpret_cast<const unsigned char*>(secret.data()),
                     secret.size(), nullptr, 0);
  int rc = crypto_kdf_derive_from_key(tokens->key_, kKeyBytes, kKdfSubkeyId, kKdfContext, master);
  sodium_memzero(master, sizeof master);
  if (rc != 0 || sodium_mprotect_noaccess(tokens->key_) != 0) return nullptr;
  return tokens;
}

void ConfirmTokens::UseSpentDir(SpentDir::Opened opened) {
  shared_required_ = true;
  shared_ = std::move(opened.dir);
  shared_error_ = std::move(opened.error);
}

ConfirmTokens::~ConfirmTokens() {
  if (key_ != nullptr) sodium_free(key_);
}

int64_t ConfirmTokens::Monotonic(int64_t now) {
  // Why: a wall clock stepped backwards must not revive a token whose spent record has
  // already been pruned; time as seen here never goes back.
  latest_now_ = std::max(latest_now_, now);
  return latest_now_;
}

void ConfirmTokens::Prune(int64_t now) {
  // An entry may leave once its token is expired: every later check of that token stops at
  // TOKEN_EXPIRED (same `now >= expiry` rule, monotonic clock), so it can never run again.
  for (auto it = spent_.begin(); it != spent_.end();) {
    it = (it->second <= now) ? spent_.erase(it) : std::next(it);
  }
}

std::optional<IssuedToken> ConfirmTokens::Issue(const WillRun& will_run, int64_t now,
                                                int64_t ttl_seconds, std::string_view tool) {
  if (ttl_seconds < 1 || ttl_seconds > kMaxTtlSeconds) return std::nullopt;
  unsigned char payload[kHashBytes];
  if (!PayloadHash(will_run, payload)) return std::nullopt;
  const int64_t expiry = Monotonic(now) + ttl_seconds;
  unsigned char claims[kClaimsBytes];
  claims[0] = kTokenVersion;
  randombytes_buf(claims + kNonceOffset, kNonceBytes);
  PutBigEndian(expiry, claims + kExpiryOffset);
  Hash(tool, claims + kToolOffset);
  std::copy_n(payload, kHashBytes, claims + kPayloadOffset);
  unsigned char mac[kMacBytes];
  if (sodium_mprotect_readonly(key_) != 0) return std::nullopt;
  crypto_auth(mac, claims, kClaimsBytes, key_);
  sodium_mprotect_noaccess(key_);
  return IssuedToken{Encode(claims, kClaimsBytes) + "." + Encode(mac, kMacBytes), expiry,
                     ttl_seconds};
}

TokenVerdict ConfirmTokens::CheckLocked(std::string_view token, const WillRun* will_run,
                                        int64_t now, Nonce* nonce, int64_t* expiry,
                                        std::string* detail, std::string_view tool_name) {
  now = Monotonic(now);
  Prune(now);
  // 1. Signature and claims: anything that is not exactly a token we signed is INVALID.
  if (token.size() > kMaxTokenChars) return TokenVerdict::kInvalid;
  const size_t dot = token.find('.');
  if (dot == std::string_view::npos) return TokenVerdict::kInvalid;
  unsigned char claims[kClaimsBytes];
  unsigned char mac[kMacBytes];
  if (!DecodeExact(token.substr(0, dot), claims, kClaimsBytes) ||
      !DecodeExact(token.substr(dot + 1), mac, kMacBytes)) {
    return TokenVerdict::kInvalid;
  }
  if (sodium_mprotect_readonly(key_) != 0) return TokenVerdict::kInvalid;
  // Why crypto_auth_verify: a constant-time comparison, so timing does not leak the MAC.
  const bool genuine = crypto_auth_verify(mac, claims, kClaimsBytes, key_) == 0;
  sodium_mprotect_noaccess(key_);
  if (!genuine || claims[0] != kTokenVersion) return TokenVerdict::kInvalid;
  unsigned char tool[kHashBytes];
  Hash(tool_name, tool);
  // Why: a token signed for another tool (or another domain) never confirms skill_run.
  if (sodium_memcmp(tool, claims + kToolOffset, kHashBytes) != 0) return TokenVerdict::kInvalid;
  std::copy_n(claims + kNonceOffset, kNonceBytes, nonce->begin());
  *expiry = GetBigEndian(claims + kExpiryOffset);
  // 2. Spent. 3. Expired.
  if (spent_.count(*nonce) != 0) return TokenVerdict::kReused;
  if (shared_ != nullptr) {
    // Why: spent by another broker with this key, or by this one before a restart.
    switch (shared_->Lookup(*nonce, *expiry, detail)) {
      case SpentDir::State::kUnspent:
        break;
      case SpentDir::State::kSpent:
        return TokenVerdict::kReused;
      default:
        return TokenVerdict::kUnrecorded;  // fail closed: unknown means refused
    }
  }
  if (now >= *expiry) return TokenVerdict::kExpired;
  // 4. Payload: the run must be the one previewed, byte for byte.
  if (will_run != nullptr) {
    unsigned char payload[kHashBytes];
    if (!PayloadHash(*will_run, payload)) return TokenVerdict::kDraftChanged;
    if (sodium_memcmp(payload, claims + kPayloadOffset, kHashBytes) != 0) {
      return TokenVerdict::kDraftChanged;
    }
  }
  return TokenVerdict::kValid;
}

TokenVerdict ConfirmTokens::SpendLocked(const Nonce& nonce, int64_t expiry, int64_t now,
                                        std::string* detail) {
  now = Monotonic(now);
  Prune(now);
  if (spent_.count(nonce) != 0) return TokenVerdict::kReused;
  if (now >= expiry) return TokenVerdict::kExpired;
  // Why refuse when full: evicting a live entry would let that token run a second time.
  if (spent_.size() >= kMaxSpentTokens) return TokenVerdict::kSpentSetFull;
  if (shared_required_) {
    // Why refuse when the record cannot be written: a spend nobody else can see would let
    // another broker, or this one after a restart, run the same token again.
    if (shared_ == nullptr) {
      *detail = shared_error_;
      return TokenVerdict::kUnrecorded;
    }
    switch (shared_->Record(nonce, expiry, now, detail)) {
      case SpentDir::State::kUnspent:
        break;
      case SpentDir::State::kSpent:
        return TokenVerdict::kReused;
      case SpentDir::State::kFull:
        *detail = shared_->path();
        return TokenVerdict::kSharedFull;
      case SpentDir::State::kFailed:
        return TokenVerdict::kUnrecorded;
    }
  }
  spent_.emplace(nonce, expiry);
  return TokenVerdict::kValid;
}

TokenVerdict ConfirmTokens::Check(std::string_view token, const WillRun& will_run, int64_t now,
                                  std::string_view tool, std::string* detail) {
  Nonce nonce{};
  int64_t expiry = 0;
  std::string ignored;
  if (detail == nullptr) detail = &ignored;
  return CheckLocked(token, &will_run, now, &nonce, &expiry, detail, tool);
}

TokenVerdict ConfirmTokens::Spend(std::string_view token, int64_t now, std::string* detail) {
  Nonce nonce{};
  int64_t expiry = 0;
  std::string ignored;
  if (detail == nullptr) detail = &ignored;
  TokenVerdict verdict = CheckLocked(token, nullptr, now, &nonce, &expiry, detail);
  if (verdict != TokenVerdict::kValid) return verdict;
  return SpendLocked(nonce, expiry, now, detail);
}

TokenVerdict ConfirmTokens::CheckAndSpend(std::string_view token, const WillRun& will_run,
                                          int64_t now, std::string* detail, std::string_view tool,
                                          int64_t* expires_at) {
  Nonce nonce{};
  int64_t expiry = 0;
  std::string ignored;
  if (detail == nullptr) detail = &ignored;
  TokenVerdict verdict = CheckLocked(token, &will_run, now, &nonce, &expiry, detail, tool);
  if (verdict != TokenVerdict::kValid) return verdict;
  if (expires_at != nullptr) *expires_at = expiry;
  return SpendLocked(nonce, expiry, now, detail);
}

std::optional<std::string> ConfirmTokens::SharedRecordError() {
  if (!shared_required_ || shared_ != nullptr) return std::nullopt;
  return shared_error_;
}

size_t ConfirmTokens::SpentCount() {
  return spent_.size();
}

}  // namespace skillmcp
