#include "broker/confirm/will_run.h"

#include <exception>

namespace skillmcp {
namespace {

template <typename Json>
Json Build(const WillRun& will_run) {
  Json out = Json::object();
  out["skill"] = will_run.skill;
  out["interpreter"] = will_run.interpreter;
  if (will_run.interpreter_path) out["interpreterPath"] = *will_run.interpreter_path;
  out["argv"] = will_run.argv;
  out["cwd"] = will_run.cwd;
  out["timeoutMs"] = will_run.timeout_ms;
  out["envNames"] = will_run.env_names;
  if (!will_run.env_not_set.empty()) out["envNotSet"] = will_run.env_not_set;
  if (will_run.env_warning) out["envWarning"] = *will_run.env_warning;
  if (will_run.egress) {
    Json hosts = Json::array();
    for (const EgressRule& rule : *will_run.egress) {
      Json host = Json::object();
      host["host"] = rule.host;
      host["ports"] = rule.ports;
      hosts.push_back(std::move(host));
    }
    out["egress"] = std::move(hosts);
  }
  return out;
}

}  // namespace

nlohmann::ordered_json WillRunJson(const WillRun& will_run) {
  return Build<nlohmann::ordered_json>(will_run);
}

std::optional<std::string> CanonicalWillRun(const WillRun& will_run) {
  try {
    // Why sorted and compact: the binding must not depend on emission order or layout.
    // Strict UTF-8 (the default handler throws): a lossy replacement could make two
    // different argvs hash alike.
    return Build<nlohmann::json>(will_run).dump();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace skillmcp
