// Completion loops as one construct, for the trace fit. Internal to the models library. See
// docs/reference/trace-model.md, "Completion loops".
#pragma once

#include "gridcast/models/stream.hpp"

namespace gridcast::models::trace::detail {

/// The calls of `inner` with every completion loop folded into one construct. A completion loop is a run
/// of MPI_Waitsome / MPI_Waitany calls (MPI_Testsome, MPI_Testany, MPI_Testall mixed in), with only
/// compute bursts between them: how many calls it makes depends on when messages arrive, so two runs of
/// the same size differ there; a run starts at its first blocking call (polls before it stay polls). It becomes what it does: one compute record with the bursts' time (the
/// loop's own cost, its processing between calls), then one waitall of the requests it completed (those
/// its calls named, in creation order) under the first call's function name, with the calls' time. A request completed by
/// such a construct is left out of the waits and tests that name it later. Runs of MPI_Test* calls
/// alone stay polls (trace_fold.cpp folds them).
CallStreamPtr fold_completion_loops(CallStreamPtr inner);

}  // namespace gridcast::models::trace::detail
