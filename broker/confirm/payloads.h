// The confirmation gate's tool results and the elicitation request, in docs/wire.md key order
// (the server prints these 2-space indented). All prose is written here.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "broker/confirm/gate_config.h"
#include "broker/confirm/tokens.h"
#include "broker/confirm/will_run.h"

namespace skillmcp {

inline constexpr std::string_view kRunAction = "skill.run";
inline constexpr std::string_view kApproveProperty = "approve";

// ISO-8601 UTC with milliseconds, e.g. 2026-11-30T08:15:00.000Z.
std::string FormatIsoUtc(int64_t unix_seconds);

// {dryRun: true, willRun, note}
nlohmann::ordered_json PreviewJson(const WillRun& will_run);

// {status: "confirmation-required", confirmed, dispatched, action, preview, confirmToken,
//  expiresAt, ttlSeconds, instruction}; `mode` is kAskUser or kAuto.
nlohmann::ordered_json ConfirmationRequiredPayload(const WillRun& will_run,
                                                   const IssuedToken& token, ConfirmMode mode);

// {status: "confirmation-rejected", confirmed, dispatched, error, action, note} for
// TOKEN_INVALID, TOKEN_REUSED, TOKEN_EXPIRED (and a full spent set, reported as
// TOKEN_EXPIRED), SPEND_UNRECORDED (`detail` says why the spend could not be recorded).
nlohmann::ordered_json RejectionPayload(TokenVerdict verdict, const std::string& detail = "");

// DRAFT_CHANGED: {status, confirmed, dispatched, error, action, reason: "payload-changed", note,
//  preview, confirmToken, expiresAt, ttlSeconds, instruction}. The old token stays unspent.
nlohmann::ordered_json DraftChangedPayload(const WillRun& fresh, const IssuedToken& fresh_token,
                                           ConfirmMode mode);

// Mode refuse (or a gate refusing every run): {confirmed, dispatched, action,
//  reason: "confirmation-unsupported", note}. `why`, when given, replaces the default note
// (e.g. GateConfig::refusal).
nlohmann::ordered_json RefusedPayload(const std::string& why = "");

enum class ElicitationOutcome { kDeclined, kCancelled };

// {confirmed: false, cancelled: true, action, note}; nothing ran.
nlohmann::ordered_json ElicitationCancelledPayload(ElicitationOutcome outcome);

// elicitation/create params: {message, requestedSchema} with one required boolean
// `approve`. Approve only when the answer is accept AND approve is true. The message
// states skill, script, interpreter, directory, time limit and variables (and any
// warning) before the arguments, every untrusted value escaped (ShowUntrusted).
nlohmann::ordered_json ElicitationRequestParams(const WillRun& will_run);

}  // namespace skillmcp
