// confirmToken: a single-use, expiring MAC over the canonical willRun and the identity of
// the script it runs (docs/wire.md, "Confirmation").
//
//   token  = base64url(claims) "." base64url(crypto_auth(claims, key))   (no padding)
//   claims = version(1) | nonce(16) | expiry unix seconds (8, big-endian)
//            | BLAKE2b-256("skill_run")
//            | BLAKE2b-256(CanonicalWillRun | 0x00 | WillRun::script_identity)
//
// The key lives in libsodium guarded memory, no-access except while a MAC is computed.
// Time is always a parameter (`now`, unix seconds) so tests control the clock.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "broker/confirm/spent_dir.h"
#include "broker/confirm/will_run.h"

namespace skillmcp {

enum class TokenVerdict {
  kValid,
  kInvalid,       // TOKEN_INVALID: does not decode, wrong shape, another key, another tool
  kReused,        // TOKEN_REUSED: already spent (this process, or the shared record)
  kExpired,       // TOKEN_EXPIRED
  kDraftChanged,  // DRAFT_CHANGED: genuine and unspent, but bound to another willRun
  kSpentSetFull,  // this process cannot track one more spend before older tokens lapse
  kSharedFull,    // the host-wide spent record is full (every broker sharing it); refused
  kUnrecorded,    // SPEND_UNRECORDED: the shared spent record cannot be read or written
};

// The wire `error` value: TOKEN_INVALID | TOKEN_REUSED | TOKEN_EXPIRED | DRAFT_CHANGED.
// kSpentSetFull and kSharedFull are reported as TOKEN_EXPIRED (ask again later), each with
// its own note (broker/confirm/payloads.h); kValid as "";
// kUnrecorded as SPEND_UNRECORDED (nothing ran, the token is unspent).
const char* TokenErrorCode(TokenVerdict verdict);

struct IssuedToken {
  std::string token;
  int64_t expires_at = 0;  // unix seconds
  int64_t ttl_seconds = 0;
};

inline constexpr size_t kMaxSpentTokens = 4096;
inline constexpr uint8_t kTokenVersion = 1;
inline constexpr std::string_view kSkillRunTool = "skill_run";
// The domain of the requestState a 2026-07-28 `input_required` round hands out
// (docs/wire.md §8). Why a domain of its own: a round state is handed out BEFORE the user
// answered, so it must never pass as a confirmToken, nor a confirmToken as a round state.
inline constexpr std::string_view kSkillRunRoundTool = "skill_run/input_required";

class ConfirmTokens {
 public:
  // A random key for this process (tokens die with it). nullptr if libsodium cannot start
  // or guarded memory cannot be had.
  static std::unique_ptr<ConfirmTokens> CreateRandom();
  // A key derived from MCP_CONFIRM_SECRET: the same secret gives the same key after a
  // restart. The caller passes the value inside EnvStore::WithValue.
  static std::unique_ptr<ConfirmTokens> CreateFromSecret(std::string_view secret);

  // With a key that outlives this process (a secret), the spent record must be shared by
  // every broker using it: from now on every spend is also recorded in `opened.dir`, and
  // when there is none (`opened.error`) every spend is refused as kUnrecorded.
  void UseSpentDir(SpentDir::Opened opened);

  ~ConfirmTokens();
  ConfirmTokens(const ConfirmTokens&) = delete;
  ConfirmTokens& operator=(const ConfirmTokens&) = delete;

  // nullopt when the willRun is not confirmable (not valid UTF-8) or ttl_seconds < 1.
  // `tool` is bound into the claims; Check only accepts kSkillRunTool (the parameter exists
  // so a test can prove a token minted for another tool is refused).
  std::optional<IssuedToken> Issue(const WillRun& will_run, int64_t now, int64_t ttl_seconds,
                                   std::string_view tool = kSkillRunTool);

  // Signature/claims, then spent, then expired, then payload. Spends nothing. `tool` is the
  // domain the token must have been issued for (kSkillRunTool or kSkillRunRoundTool);
  // `detail` says why for kUnrecorded.
  TokenVerdict Check(std::string_view token, const WillRun& will_run, int64_t now,
                     std::string_view tool = kSkillRunTool, std::string* detail = nullptr);

  // Marks a genuine token spent: kValid when it was not spent before, kReused when it was,
  // kInvalid when it is not ours, kExpired, kSpentSetFull, kSharedFull (`detail`: the
  // record's path). No payload check.
  // kUnrecorded when the shared record cannot be read or written (`detail` says why).
  TokenVerdict Spend(std::string_view token, int64_t now, std::string* detail = nullptr);

  // Check and, when kValid, Spend, in one step: two pipelined calls carrying the same
  // token cannot both pass (the broker is single-threaded; no lock is needed).
  // `expires_at`, when given, gets the spent token's expiry (the audit trail tells from it
  // how long ago the preview was shown).
  TokenVerdict CheckAndSpend(std::string_view token, const WillRun& will_run, int64_t now,
                             std::string* detail = nullptr, std::string_view tool = kSkillRunTool,
                             int64_t* expires_at = nullptr);

  size_t SpentCount();

  // Why no usable token can be issued: a shared record is required and could not be
  // opened. nullopt otherwise.
  std::optional<std::string> SharedRecordError();

  // The key's address, only so a test can prove it is unreadable while idle.
  const void* KeyAddressForTesting() const { return key_; }

 private:
  using Nonce = TokenNonce;

  ConfirmTokens() = default;
  bool AllocateKey();
  TokenVerdict CheckLocked(std::string_view token, const WillRun* will_run, int64_t now,
                           Nonce* nonce, int64_t* expiry, std::string* detail,
                           std::string_view tool = kSkillRunTool);
  TokenVerdict SpendLocked(const Nonce& nonce, int64_t expiry, int64_t now, std::string* detail);
  int64_t Monotonic(int64_t now);
  void Prune(int64_t now);

  unsigned char* key_ = nullptr;    // sodium_malloc'd, PROT_NONE while idle
  std::map<Nonce, int64_t> spent_;  // nonce -> expiry
  int64_t latest_now_ = 0;          // highest clock reading seen
  bool shared_required_ = false;    // UseSpentDir was called
  std::unique_ptr<SpentDir> shared_;  // the host-wide record, when it could be opened
  std::string shared_error_;          // why it could not
};

}  // namespace skillmcp
