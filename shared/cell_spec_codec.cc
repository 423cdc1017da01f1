// The cell's codec (shared/worker_protocol.h, CellSpec): what a whole description
// implies, whether a description matches its cell, the cell's rules, and its framed
// encoding over the protocol's wire primitives (shared/worker_wire.h), as strict as the
// run description's.
#include "shared/worker_protocol.h"
#include "shared/worker_wire.h"

namespace skillmcp {
namespace {

using wire::IsNormalisedOrEmpty;
using wire::PutString;
using wire::PutStrings;
using wire::PutU32;
using wire::PutU8;
using wire::Reader;

constexpr char kCellMagic[4] = {'S', 'M', 'C', 'S'};

}  // namespace

CellSpec CellOf(const RunSpec& spec) {
  CellSpec cell;
  cell.switch_ids = spec.switch_ids;
  cell.ids_ahead = spec.switch_ids;
  if (spec.switch_ids) {
    cell.uid = spec.uid;
    cell.gid = spec.gid;
  }
  cell.view_ahead = spec.namespaces && !spec.probe;
  if (cell.view_ahead) cell.hidden_roots = spec.hidden_roots;
  cell.network_ahead = cell.view_ahead && spec.egress_declared;
  return cell;
}

bool CellMatches(const CellSpec& cell, const RunSpec& spec) {
  // why: a probe is its own whole description (fd 3 a pipe), never a run after a cell.
  if (spec.probe || cell.switch_ids != spec.switch_ids) return false;
  if (cell.ids_ahead && (cell.uid != spec.uid || cell.gid != spec.gid)) return false;
  // why: the view built ahead hides exactly the cell's roots; a run that asked for none,
  // or for other roots, would run in a view it did not ask for.
  if (cell.view_ahead && (!spec.namespaces || cell.hidden_roots != spec.hidden_roots)) return false;
  // why both ways: a network made ahead is a declared run's own (a run of another mode
  // would start in a network it did not ask for), and a cell with the view ahead has it
  // exactly where its broker is in the declared mode, so a declared run after a cell
  // without it was described for another cell.
  if (cell.view_ahead && cell.network_ahead != spec.egress_declared) return false;
  // why: the rules ahead were made for exactly these values; a namespaced run's rules
  // must have been looked up in its own view (the covers are what they reach).
  return !cell.landlock_ahead ||
         (cell.landlock_abi == spec.landlock_abi && cell.network_off == spec.network_off &&
          cell.node_dir_path == spec.node_dir_path && (!spec.namespaces || cell.view_ahead));
}

bool IsValidCellSpec(const CellSpec& cell) {
  // why: a switch ahead for a broker that does not switch, or ids that would not be
  // used, is a broker that meant something else.
  if (cell.ids_ahead ? !cell.switch_ids : (cell.uid != 0 || cell.gid != 0)) return false;
  // why: the view's user namespace maps the identity the worker holds when it builds it,
  // which is the run's only with ids_ahead or without any switch.
  if (cell.view_ahead && cell.switch_ids && !cell.ids_ahead) return false;
  if (!cell.view_ahead && !cell.hidden_roots.empty()) return false;
  // why: the network namespace is made with the capabilities over the view's user
  // namespace, which owns it; without the view ahead the worker holds none yet.
  if (cell.network_ahead && !cell.view_ahead) return false;
  if (cell.hidden_roots.size() > kRunSpecMaxHiddenRoots) return false;
  // why normalised: the worker matches paths to the roots by their text ("/srv/./x" or
  // "//srv" would be another path than the one meant).
  for (const auto& root : cell.hidden_roots)
    if (!IsNormalisedAbsolutePath(root) || root == "/") return false;  // "/" hides everything
  if (!cell.landlock_ahead)
    return cell.landlock_abi == 0 && !cell.network_off && cell.node_dir_path.empty();
  // why: a rule's path is opened as the run's user, which the worker is only with
  // ids_ahead or without any switch.
  if (cell.switch_ids && !cell.ids_ahead) return false;
  if (cell.landlock_abi == 0 || cell.landlock_abi > kRunSpecMaxLandlockAbi) return false;
  if (cell.network_off && cell.landlock_abi < 4) return false;  // as in a run description
  return IsNormalisedOrEmpty(cell.node_dir_path);
}

std::optional<std::string> EncodeCellSpec(const CellSpec& cell) {
  if (!IsValidCellSpec(cell)) return std::nullopt;
  std::string payload(kCellMagic, sizeof(kCellMagic));
  PutU32(payload, kWorkerProtocolVersion);
  PutU8(payload, cell.switch_ids ? 1 : 0);
  PutU8(payload, cell.ids_ahead ? 1 : 0);
  PutU32(payload, cell.uid);
  PutU32(payload, cell.gid);
  PutU8(payload, cell.view_ahead ? 1 : 0);
  PutStrings(payload, cell.hidden_roots);
  PutU8(payload, cell.network_ahead ? 1 : 0);
  PutU8(payload, cell.landlock_ahead ? 1 : 0);
  PutU32(payload, cell.landlock_abi);
  PutU8(payload, cell.network_off ? 1 : 0);
  PutString(payload, cell.node_dir_path);
  if (payload.size() > kCellSpecMaxBytes) return std::nullopt;  // the worker would refuse it
  std::string out;
  PutU32(out, static_cast<uint32_t>(payload.size()));
  return out + payload;
}

std::optional<CellSpec> DecodeCellSpec(std::string_view payload) {
  if (payload.size() > kCellSpecMaxBytes) return std::nullopt;
  Reader r(payload);
  CellSpec cell;
  uint32_t version = 0;
  if (!r.Magic(kCellMagic) || !r.U32(version) || version != kWorkerProtocolVersion)
    return std::nullopt;
  if (!r.Bool(cell.switch_ids) || !r.Bool(cell.ids_ahead) || !r.U32(cell.uid) || !r.U32(cell.gid))
    return std::nullopt;
  size_t root_budget = kRunSpecMaxHiddenRoots;
  if (!r.Bool(cell.view_ahead) || !r.Strings(cell.hidden_roots, root_budget) ||
      !r.Bool(cell.network_ahead))
    return std::nullopt;
  if (!r.Bool(cell.landlock_ahead) || !r.U32(cell.landlock_abi) || !r.Bool(cell.network_off) ||
      !r.String(cell.node_dir_path))
    return std::nullopt;
  if (!r.AtEnd()) return std::nullopt;  // trailing bytes: not what the broker meant
  if (!IsValidCellSpec(cell)) return std::nullopt;
  return cell;
}

}  // namespace skillmcp
