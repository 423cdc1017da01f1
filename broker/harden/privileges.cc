#include "broker/harden/privileges.h"

#include <grp.h>
#include <pwd.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <vector>

#include "broker/harden/detail_text.h"
#include "broker/harden/process_harden.h"
#include "config.h"

namespace skillmcp {
namespace {

// What the broker keeps, and why each one:
//   CAP_SETUID, CAP_SETGID: a worker switches to the run-as uid/gid (setresuid,
//     setresgid, setgroups) before exec'ing node; it inherits them as ambient caps.
//   CAP_KILL: signalling a worker that runs under another uid (timeout, Cancel,
//     shutdown) needs it, pidfd_send_signal included.
//   CAP_SETPCAP: only for the worker: it empties its own bounding set and locks its
//     securebits before the uid switch (docs/isolation.md); without it a worker of a
//     root-started broker kept cap_setuid, cap_setgid and cap_kill in its bounding set.
//     Since Linux 2.6.25 it grants no capability beyond the bounding set.
constexpr cap_value_t kKept[] = {CAP_SETUID, CAP_SETGID, CAP_KILL, CAP_SETPCAP};
// Inheritable holds only what a worker needs: an ambient cap must be permitted and
// inheritable, and the worker binary has no file capabilities to receive them otherwise.
constexpr cap_value_t kInheritable[] = {CAP_SETUID, CAP_SETGID, CAP_SETPCAP};

std::string Err(const std::string& what) { return what + ": " + std::strerror(errno); }

bool CapHas(cap_t caps, cap_value_t c, cap_flag_t flag) {
  cap_flag_value_t v = CAP_CLEAR;
  return caps != nullptr && cap_get_flag(caps, c, flag, &v) == 0 && v == CAP_SET;
}

bool ParseId(std::string_view s, uint32_t* out) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool IsKept(cap_value_t c) {
  for (cap_value_t k : kKept)
    if (k == c) return true;
  return false;
}

std::string CurrentCapsText() {
  cap_t caps = cap_get_proc();
  if (caps == nullptr) return "(unreadable)";
  char* text = cap_to_text(caps, nullptr);
  std::string out = text != nullptr ? text : "(unreadable)";
  cap_free(text);
  cap_free(caps);
  return out;
}

// Sets permitted+effective to kKept (only those currently permitted), inheritable to
// kInheritable, and clears ambient. Returns false with `why` on failure.
bool ReduceCaps(std::string* why) {
  cap_t now = cap_get_proc();
  cap_t want = cap_init();
  if (now == nullptr || want == nullptr) {
    *why = Err("libcap");
    cap_free(now);
    cap_free(want);
    return false;
  }
  for (cap_value_t c : kKept) {
    if (!CapHas(now, c, CAP_PERMITTED)) continue;
    cap_set_flag(want, CAP_PERMITTED, 1, &c, CAP_SET);
    cap_set_flag(want, CAP_EFFECTIVE, 1, &c, CAP_SET);
  }
  for (cap_value_t c : kInheritable) {
    if (!CapHas(now, c, CAP_PERMITTED)) continue;
    cap_set_flag(want, CAP_INHERITABLE, 1, &c, CAP_SET);
  }
  bool ok = cap_set_proc(want) == 0;
  if (!ok) *why = Err("cap_set_proc");
  cap_free(now);
  cap_free(want);
  // why: ambient caps survive a non-root exec; nothing may reach a child by default.
  if (ok && prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) {
    *why = Err("clearing the ambient set");
    ok = false;
  }
  return ok;
}

// Drops every bounding-set capability except kKept. Needs CAP_SETPCAP. With it, dropping
// one that is already gone succeeds, so there is no read before each drop (one prctl per
// cap); without it every drop is EPERM, and only a cap still there is a failure.
bool ReduceBounding(std::string* why) {
  int last = static_cast<int>(cap_max_bits()) - 1;
  for (int c = 0; c <= last; ++c) {
    if (IsKept(static_cast<cap_value_t>(c))) continue;
    if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0) {
      if (errno == EPERM && prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 0) continue;
      *why = Err("dropping capability " + std::to_string(c) + " from the bounding set");
      return false;
    }
  }
  return true;
}

bool CapsWithinKept(std::string* why, bool check_bounding = true) {
  cap_t caps = cap_get_proc();
  if (caps == nullptr) {
    *why = Err("cap_get_proc");
    return false;
  }
  int last = static_cast<int>(cap_max_bits()) - 1;
  bool ok = true;
  for (int c = 0; c <= last && ok; ++c) {
    cap_value_t v = static_cast<cap_value_t>(c);
    if (IsKept(v)) continue;
    // No ambient check of its own: the kernel keeps ambient within permitted and
    // inheritable (capabilities(7)), and both are checked clear here.
    if (CapHas(caps, v, CAP_PERMITTED) || CapHas(caps, v, CAP_EFFECTIVE) ||
        CapHas(caps, v, CAP_INHERITABLE) ||
        (check_bounding && prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1)) {
      *why = "capability " + std::to_string(c) + " is still held";
      ok = false;
    }
  }
  cap_free(caps);
  return ok;
}

// The switch itself, in this order: keep-caps across setuid, bounding set (needs
// CAP_SETPCAP, gone after the switch), supplementary groups, gid, uid, the kept caps,
// keep-caps off, the dumpable flag again. Returns false with `why` at the first failure.
bool SwitchTo(const Identity& id, std::string* why) {
  // why: without KEEPCAPS, setresuid away from 0 empties the permitted set.
  if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0) return *why = Err("PR_SET_KEEPCAPS"), false;
  if (!ReduceBounding(why)) return false;
  // why: root's supplementary groups (disk, adm...) must not follow the broker.
  if (setgroups(0, nullptr) != 0) return *why = Err("setgroups"), false;
  if (setresgid(id.gid, id.gid, id.gid) != 0)
    return *why = Err("setresgid(" + std::to_string(id.gid) + ")"), false;
  if (setresuid(id.uid, id.uid, id.uid) != 0)
    return *why = Err("setresuid(" + std::to_string(id.uid) + ")"), false;
  if (!ReduceCaps(why)) return false;
  prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
  // why: a uid change resets the dumpable flag to fs.suid_dumpable, which may be 1.
  if (!MakeNonDumpable())
    return *why = "the broker became dumpable again after the uid switch", false;
  uid_t r, e, s;
  gid_t rg, eg, sg;
  if (getresuid(&r, &e, &s) != 0 || r != id.uid || e != id.uid || s != id.uid ||
      getresgid(&rg, &eg, &sg) != 0 || rg != id.gid || eg != id.gid || sg != id.gid)
    return *why = "the uid/gid switch did not hold", false;
  return CapsWithinKept(why);
}

}  // namespace

Identity ResolveIdentity(std::string_view spec, uid_t fallback) {
  Identity id;
  std::string s(spec);
  uint32_t u = 0, g = 0;
  size_t colon = s.find(':');
  std::string_view head = std::string_view(s).substr(0, colon);
  if (ParseId(head, &u)) {
    g = u;
    if (colon != std::string::npos && !ParseId(std::string_view(s).substr(colon + 1), &g)) {
      id.error = "\"" + s + "\" is neither a user name nor uid[:gid]";
      return id;
    }
    id.uid = u;
    id.gid = g;
    id.how = "uid " + std::to_string(u) + ", gid " + std::to_string(g);
  } else {
    if (s.empty()) {
      id.error = "no user named";
      return id;
    }
    std::vector<char> buf(16384);
    passwd pw{};
    passwd* found = nullptr;
    int rc = getpwnam_r(s.c_str(), &pw, buf.data(), buf.size(), &found);
    if (found != nullptr) {
      id.uid = pw.pw_uid;
      id.gid = pw.pw_gid;
      id.how = "user " + s + " (" + std::to_string(id.uid) + ":" + std::to_string(id.gid) + ")";
    } else if (rc != 0 && rc != ENOENT && rc != ESRCH && rc != EBADF && rc != EPERM) {
      id.error = "cannot look up user " + s + ": " + std::strerror(rc);
      return id;
    } else {
      // Decision: a missing user falls back to a fixed id with no passwd entry, as long
      // as no other user owns that id (a shared id would let scripts act as that user).
      passwd* other = nullptr;
      passwd opw{};
      getpwuid_r(fallback, &opw, buf.data(), buf.size(), &other);
      if (other != nullptr) {
        id.error = "user " + s + " does not exist and the fallback uid " +
                   std::to_string(fallback) + " belongs to " + opw.pw_name + "; create " + s +
                   " (sysusers) or name another user";
        return id;
      }
      id.uid = fallback;
      id.gid = fallback;
      id.how = "uid " + std::to_string(fallback) + ", gid " + std::to_string(fallback) +
               " (no user " + s + " exists; fixed fallback with no passwd entry)";
    }
  }
  // why: the whole point is leaving root; uid 0 or gid 0 is never an unprivileged identity.
  if (id.uid == 0 || id.gid == 0) {
    id.error = "\"" + s + "\" resolves to uid " + std::to_string(id.uid) + ", gid " +
               std::to_string(id.gid) + ": root is refused";
    return id;
  }
  id.ok = true;
  return id;
}

PrivilegeOptions PrivilegeOptionsFrom(const EnvStore& env) {
  PrivilegeOptions o;
  o.service_user = env.GetConfig("SKILL_MCP_USER").value_or(SKILL_MCP_SERVICE_USER);
  o.run_as = env.GetConfig("SKILL_MCP_RUN_AS").value_or(SKILL_MCP_RUN_AS_USER);
  return o;
}

PrivilegeState DropPrivileges(const PrivilegeOptions& options) {
  PrivilegeState st;
  uid_t r, e, s;
  getresuid(&r, &e, &s);
  st.started_as_root = r == 0 || e == 0 || s == 0;
  cap_t caps = cap_get_proc();
  st.had_setid_caps =
      CapHas(caps, CAP_SETUID, CAP_PERMITTED) && CapHas(caps, CAP_SETGID, CAP_PERMITTED);
  cap_free(caps);
  st.switch_demanded = st.started_as_root;

  if (!st.started_as_root && !st.had_setid_caps) {
    st.uid = getuid();
    st.gid = getgid();
    std::string why;
    st.caps_reduced = CapsWithinKept(&why, false);
    if (!st.caps_reduced) AppendDetail(st.detail, why);
    st.caps_text = CurrentCapsText();
    AppendDetail(
        st.detail,
        "started as uid " + std::to_string(st.uid) +
            " without CAP_SETUID/CAP_SETGID: scripts run under the broker's own uid "
            "(start it as root, or with AmbientCapabilities=CAP_SETUID CAP_SETGID CAP_KILL)");
    return st;
  }

  st.run_as = ResolveIdentity(options.run_as, kFallbackRunAsId);
  if (!st.run_as.ok) AppendDetail(st.detail, "run-as identity: " + st.run_as.error);

  if (st.started_as_root) {
    st.service = ResolveIdentity(options.service_user, kFallbackServiceId);
    std::string why;
    if (!st.service.ok) {
      AppendDetail(st.detail, "service identity: " + st.service.error);
    } else if (st.run_as.ok && st.run_as.uid == st.service.uid) {
      // why: a script under the broker's own uid could signal or trace the broker.
      AppendDetail(st.detail, "the run-as uid " + std::to_string(st.run_as.uid) +
                                  " equals the broker's service uid; name two different users");
    } else if (!SwitchTo(st.service, &why)) {
      AppendDetail(st.detail, "could not switch the broker to " + st.service.how + ": " + why);
    } else {
      st.broker_switched = true;
    }
  } else {
    // Started unprivileged with the setid caps (e.g. systemd AmbientCapabilities): keep
    // the uid, shed every capability but the kept ones; the bounding set only shrinks
    // where CAP_SETPCAP allows.
    std::string why;
    ReduceBounding(&why);
    if (!ReduceCaps(&why)) AppendDetail(st.detail, "could not reduce the capabilities: " + why);
  }

  st.uid = geteuid();
  st.gid = getegid();
  std::string why;
  // Started unprivileged, the bounding set shrinks only with CAP_SETPCAP; it matters
  // little there: the broker never execs, and workers set no_new_privs.
  st.caps_reduced = st.uid != 0 && CapsWithinKept(&why, st.started_as_root);
  if (!st.caps_reduced && st.uid != 0) AppendDetail(st.detail, why);
  std::string bwhy;
  if (st.caps_reduced && !st.started_as_root && !CapsWithinKept(&bwhy))
    AppendDetail(st.detail,
                 "the bounding set keeps more than the four (no CAP_SETPCAP to shrink it)");
  st.caps_text = CurrentCapsText();
  caps = cap_get_proc();
  bool setid = st.uid == 0 ||
               (CapHas(caps, CAP_SETUID, CAP_EFFECTIVE) && CapHas(caps, CAP_SETGID, CAP_EFFECTIVE));
  st.can_signal_other_uid = st.uid == 0 || CapHas(caps, CAP_KILL, CAP_EFFECTIVE);
  cap_free(caps);
  if (st.run_as.ok && st.run_as.uid == st.uid) {
    AppendDetail(st.detail,
                 "the run-as uid is the broker's own uid; workers would not be separated");
  } else if (st.run_as.ok && setid && !st.can_signal_other_uid) {
    // why: a worker under another uid that the broker cannot signal could outlive its
    // timeout and its client; without CAP_KILL no worker changes uid.
    AppendDetail(st.detail,
                 "the broker lacks CAP_KILL, so it could not stop a worker under another uid");
  } else {
    st.worker_switch = st.run_as.ok && setid;
  }
  return st;
}

}  // namespace skillmcp
