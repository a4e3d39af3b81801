// The registry of every algorithm gridcast knows, by kind and name, and the dispatch between the three
// selectors (select_mpich.cpp, select_smpi.cpp, select_openmpi.cpp). The algorithms themselves are one
// file per collective in this folder.
#include "colls.hpp"

#include <stdexcept>
#include <string>

namespace gridcast::emulator {

std::string_view collective_name(CollectiveKind k)
{
  // The names of the trace ops (models/call.cpp), which `--cfg gridcast/coll/<op>` also uses.
  switch (k) {
    case CollectiveKind::Barrier: return "barrier";
    case CollectiveKind::Bcast: return "bcast";
    case CollectiveKind::Reduce: return "reduce";
    case CollectiveKind::Allreduce: return "allreduce";
    case CollectiveKind::Alltoall: return "alltoall";
    case CollectiveKind::Alltoallv: return "alltoallv";
    case CollectiveKind::Gather: return "gather";
    case CollectiveKind::Gatherv: return "gatherv";
    case CollectiveKind::Allgather: return "allgather";
    case CollectiveKind::Allgatherv: return "allgatherv";
    case CollectiveKind::Scatter: return "scatter";
    case CollectiveKind::Scatterv: return "scatterv";
    case CollectiveKind::ReduceScatter: return "reducescatter";
    case CollectiveKind::Scan: return "scan";
    case CollectiveKind::Exscan: return "exscan";
  }
  throw std::invalid_argument("collective_name: invalid CollectiveKind " + std::to_string(static_cast<int>(k)));
}

CollectiveRegistry::CollectiveRegistry()
{
  using K = CollectiveKind;
  using namespace colls;
  // `copying(bytes, touched, fn)`: the local copy the library makes before the messages (free unless
  // the platform gives a copy rate; cold past the node's cache); bcast, barrier, scan and exscan are not
  // charged one.
  algorithms_[K::Barrier] = {{"dissemination", barrier_dissemination}, {"binomial", barrier_binomial}};
  algorithms_[K::Bcast] = {
      {"binomial", bcast_binomial}, {"scatter_allgather", bcast_scatter_allgather}, {"linear", bcast_linear}};
  algorithms_[K::Bcast].emplace("pipeline", bcast_pipeline);  // Open MPI's, 128 KiB segments
  algorithms_[K::Reduce] = {{"binomial", copying(copy_whole_buffer, touched_two_buffers, reducing(reduce_binomial))},
                            {"linear", copying(copy_root_buffer, touched_root_two_buffers, reducing(reduce_linear))},
                            {"rabenseifner", copying(copy_whole_buffer, touched_two_buffers, reducing(reduce_rabenseifner))}};
  algorithms_[K::Allreduce] = {
      {"recursive_doubling", copying(copy_whole_buffer, touched_two_buffers, reducing(allreduce_recursive_doubling))},
      {"rabenseifner", copying(copy_whole_buffer, touched_two_buffers, reducing(allreduce_rabenseifner))},
      {"ring", copying(copy_whole_buffer, touched_two_buffers, reducing(allreduce_ring))},
      {"reduce_bcast", copying(copy_whole_buffer, touched_two_buffers, reducing(allreduce_reduce_bcast))}};
  algorithms_[K::Allgather] = {{"recursive_doubling", copying(copy_own_block, touched_allgather, allgather_recursive_doubling)},
                               {"ring", copying(copy_own_block, touched_allgather, allgather_ring)},
                               {"bruck", copying(copy_own_block, touched_allgather, allgather_bruck)}};
  algorithms_[K::Allgatherv] = {{"ring", copying(copy_own_allgatherv_block, touched_allgatherv, allgatherv_ring)},
                                {"linear", copying(copy_own_allgatherv_block, touched_allgatherv, allgatherv_linear)}};
  algorithms_[K::Alltoall] = {{"pairwise", copying(copy_own_block, touched_alltoall, alltoall_pairwise)},
                              {"bruck", copying(copy_own_block, touched_alltoall, alltoall_bruck)},
                              {"linear", copying(copy_own_block, touched_alltoall, alltoall_linear)}};
  algorithms_[K::Alltoallv] = {{"pairwise", copying(copy_own_v_block, touched_alltoallv, alltoallv_pairwise)},
                               {"linear", copying(copy_own_v_block, touched_alltoallv, alltoallv_linear)}};
  algorithms_[K::Gather] = {{"binomial", copying(copy_root_block, touched_gather, gather_binomial)},
                            {"linear", copying(copy_root_block, touched_gather, gather_linear)}};
  algorithms_[K::Gatherv] = {{"linear", copying(copy_root_block, touched_gatherv, gatherv_linear)}};
  algorithms_[K::Scatter] = {{"binomial", copying(copy_root_block, touched_scatter, scatter_binomial)},
                             {"linear", copying(copy_root_block, touched_scatter, scatter_linear)}};
  algorithms_[K::Scatterv] = {{"linear", copying(copy_root_v_block, touched_scatterv, scatterv_linear)}};
  algorithms_[K::ReduceScatter] = {
      {"recursive_halving", copying(copy_redscat_total, touched_redscat, reducing(redscat_recursive_halving))},
      {"pairwise", copying(copy_redscat_own_block, touched_redscat, reducing(redscat_pairwise))},
      {"reduce_scatterv", copying(copy_redscat_total, touched_redscat, reducing(redscat_reduce_scatterv))}};
  algorithms_[K::Scan] = {{"linear", reducing(scan_linear)}, {"recursive_doubling", reducing(scan_recursive_doubling)}};
  algorithms_[K::Exscan] = {{"linear", reducing(exscan_linear)},
                            {"recursive_doubling", reducing(exscan_recursive_doubling)}};
  // SMPI 3.32's defaults (CollectiveSelector::Smpi)
  algorithms_[K::Barrier].emplace("linear", barrier_linear);
  algorithms_[K::Allreduce].emplace("linear_reduce_bcast",
                                    copying(copy_whole_buffer, touched_two_buffers, reducing(allreduce_linear_reduce_bcast)));
  algorithms_[K::Allgather].emplace("linear", copying(copy_own_block, touched_allgather, allgather_linear));
  algorithms_[K::Alltoall].emplace("basic_linear", copying(copy_own_block, touched_alltoall, alltoall_basic_linear));
  algorithms_[K::Alltoallv].emplace("basic_linear", copying(copy_own_v_block, touched_alltoallv, alltoallv_basic_linear));
  algorithms_[K::ReduceScatter].emplace("linear_reduce_scatterv",
                                        copying(copy_redscat_total_at_0, touched_redscat, reducing(redscat_linear_reduce_scatterv)));
  algorithms_[K::Scan].emplace("direct", reducing(scan_direct));
  algorithms_[K::Exscan].emplace("direct", reducing(exscan_direct));
  // SMPI 3.32's nonblocking ones where they differ from its blocking defaults (select_nonblocking)
  algorithms_[K::Barrier].emplace("nbc", barrier_nbc);
  algorithms_[K::Allreduce].emplace("nbc", copying(copy_whole_buffer, touched_two_buffers, reducing(allreduce_nbc)));
  algorithms_[K::ReduceScatter].emplace("nbc", copying(copy_redscat_own_block, touched_redscat, reducing(redscat_nbc)));
}

const CollectiveAlgorithm* CollectiveRegistry::find(CollectiveKind kind, const std::string& name) const
{
  auto k = algorithms_.find(kind);
  if (k == algorithms_.end())
    return nullptr;
  auto a = k->second.find(name);
  return a == k->second.end() ? nullptr : &a->second;
}

std::vector<std::string> CollectiveRegistry::names(CollectiveKind kind) const
{
  std::vector<std::string> out;
  if (auto k = algorithms_.find(kind); k != algorithms_.end())
    for (const auto& [name, algo] : k->second)
      out.push_back(name);
  return out;
}
std::string CollectiveRegistry::select(CollectiveKind kind, const CollectiveArgs& args, int comm_size,
                                       CollectiveSelector selector) const
{
  switch (selector) {
  case CollectiveSelector::Mpich:
    return select(kind, args, comm_size);
  case CollectiveSelector::OpenMpi41:
    return select_openmpi41(kind, args, comm_size);
  case CollectiveSelector::Smpi:
    break;
  }
  if (comm_size < 1)
    throw std::invalid_argument("select: communicator size " + std::to_string(comm_size));
  return colls::select_smpi(kind, args, comm_size);
}

std::string_view collective_selector_name(CollectiveSelector selector)
{
  switch (selector) {
  case CollectiveSelector::Mpich:
    return "mpich";
  case CollectiveSelector::Smpi:
    return "smpi";
  case CollectiveSelector::OpenMpi41:
    return "openmpi-4.1";
  }
  throw std::invalid_argument("collective_selector_name: unknown selector");
}

}  // namespace gridcast::emulator
