// The broker's filesystem ids set to a run's for the life of one object, restored at the
// end (setfsuid/setfsgid are per thread): the broker makes, checks and removes what
// belongs to a run as the run's ids, never as its own. Used by broker/run/scratch_dir.cc
// and broker/run/run_identity.cc.
#pragma once

#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/types.h>

namespace skillmcp {

class RunFsIds {
 public:
  // `on` false: nothing changes (the broker does not switch ids).
  RunFsIds(bool on, uid_t uid, gid_t gid) : on_(on) {
    if (!on_) return;
    old_gid_ = setfsgid(gid);
    old_uid_ = setfsuid(uid);
    KeepNotDumpable();
    // setfsuid reports no error: reading the ids back is the only check.
    ok_ = static_cast<uid_t>(setfsuid(static_cast<uid_t>(-1))) == uid &&
          static_cast<gid_t>(setfsgid(static_cast<gid_t>(-1))) == gid;
  }
  ~RunFsIds() {
    if (!on_) return;
    setfsuid(static_cast<uid_t>(old_uid_));
    setfsgid(static_cast<gid_t>(old_gid_));
    KeepNotDumpable();
  }
  RunFsIds(const RunFsIds&) = delete;
  RunFsIds& operator=(const RunFsIds&) = delete;

  bool ok() const { return !on_ || ok_; }

 private:
  // why: the kernel resets a process's dumpable flag to fs.suid_dumpable whenever its
  // filesystem ids change (commit_creds); where that sysctl is 1 or 2 (a host set up to
  // collect core dumps), the broker holding the secrets would become dumpable after its
  // first run.
  static void KeepNotDumpable() { prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }

  bool on_;
  bool ok_ = false;
  int old_uid_ = 0, old_gid_ = 0;
};

}  // namespace skillmcp
