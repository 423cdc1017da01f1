// Step kReadSpec: what fd 3 carries, bounded and strictly decoded: a worker started ahead
// reads its cell first and its run description later; a pipe carries the whole description.
#pragma once

#include <optional>

#include "shared/unique_fd.h"
#include "shared/worker_protocol.h"
#include "worker/step_result.h"

namespace skillmcp::worker {

// The first read (step kReadSpec). On a socket (a worker started ahead of its run): the
// length-prefixed cell (shared/worker_protocol.h CellSpec), read byte for byte so that no
// byte of the run description behind it is taken, with no descriptor attached (EBADMSG)
// and 6 and 7 still empty (EEXIST); a frame over kCellSpecMaxBytes is EMSGSIZE, one
// DecodeCellSpec refuses EINVAL, EOF before it ends EPIPE. On a pipe: the whole
// description, to EOF (ReadRunSpec), kept in `whole`, and the cell taken from it.
StepResult ReadCellSpec(int fd, CellSpec& cell, std::optional<RunSpec>& whole);

// The second read on a socket, once the cell's steps are done (worker/main.cc,
// TakeCellSteps): the run description to EOF,
// which must ask for `cell` (CellMatches; EINVAL otherwise).
StepResult ReadRunSpecAfterCell(int fd, const CellSpec& cell, RunSpec& out,
                                UniqueFd& egress_channel);

// Reads at most kRunSpecMaxBytes from `fd` until EOF and decodes it. More bytes than
// that, a read error or a spec DecodeRunSpec refuses all fail (EMSGSIZE / errno / EINVAL).
// When `fd` is a socket (a worker started ahead of its run), the description may carry
// the script and skill directory descriptors (SCM_RIGHTS, exactly two, once): they are
// placed at 6 and 7, which must then be empty (EEXIST); a run in the declared network
// mode comes with a third, its egress channel, kept in `egress_channel` (close-on-exec,
// above the layout); any other count, or the channel with a run in another mode or
// without it in that mode, is EBADMSG.
StepResult ReadRunSpec(int fd, RunSpec& out, UniqueFd& egress_channel);

}  // namespace skillmcp::worker
