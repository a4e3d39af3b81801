// Communicators and what an algorithm sees of one (collective_context.hpp): the calling rank's
// point-to-point helpers on the collective context, and the node map of the cold-copy rule.
#include "gridcast/emulator/collective_context.hpp"

#include "gridcast/emulator/timeline.hpp"

#include <simgrid/s4u/Engine.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace gridcast::emulator {

int Communicator::rank_of(int world_rank) const
{
  // Every collective call asks this once per rank, so a linear scan would cost O(Np^2) per call over
  // the whole communicator. MPI_COMM_WORLD maps i to i; communicators from MPI_Comm_split with equal
  // keys keep world order, so a bisection finds them. The bisection is only trusted when it lands on
  // the rank (ranks are unique), so unsorted communicators still get the right answer from the scan.
  const auto at = [&](int i) { return world_ranks[static_cast<std::size_t>(i)]; };
  if (world_rank >= 0 && world_rank < size() && at(world_rank) == world_rank)
    return world_rank;
  int lo = 0;
  int hi = size();
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (at(mid) < world_rank)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < size() && at(lo) == world_rank)
    return lo;
  auto it = std::find(world_ranks.begin(), world_ranks.end(), world_rank);
  return it == world_ranks.end() ? -1 : static_cast<int>(it - world_ranks.begin());
}

CollectiveContext::CollectiveContext(MessageBoard& board, const Communicator& comm, int world_rank,
                                     std::function<void(double)> compute_flops)
    : board_(board), comm_(comm), world_rank_(world_rank), me_(comm.rank_of(world_rank)),
      compute_(std::move(compute_flops))
{
  if (me_ < 0)
    throw std::invalid_argument("world rank " + std::to_string(world_rank) + " is not a member of communicator " +
                                std::to_string(comm.id));
}

RequestPtr CollectiveContext::isend(int to, std::uint64_t bytes, int tag)
{
  RequestPtr r = board_.post_send(world_rank_, comm_.world_ranks.at(static_cast<std::size_t>(to)), bytes, tag,
                                  comm_.coll_context, SendMode::Standard, endpoint_);
  if (timeline_ != nullptr)
    timeline_->flow_start(world_rank_, r->message, sg4::Engine::get_clock());
  return r;
}

RequestPtr CollectiveContext::irecv(int from, std::uint64_t bytes, int tag)
{
  return board_.post_recv(world_rank_, comm_.world_ranks.at(static_cast<std::size_t>(from)), bytes, tag,
                          comm_.coll_context, endpoint_);
}

void CollectiveContext::send(int to, std::uint64_t bytes, int tag)
{
  wait(isend(to, bytes, tag));
}

void CollectiveContext::recv(int from, std::uint64_t bytes, int tag)
{
  wait(irecv(from, bytes, tag));
}

void CollectiveContext::sendrecv(int to, std::uint64_t send_bytes, int from, std::uint64_t recv_bytes, int tag)
{
  // MPIC_Sendrecv: both posted before either is waited for, so two ranks exchanging large
  // (rendezvous) messages cannot deadlock.
  RequestPtr r = irecv(from, recv_bytes, tag);
  RequestPtr s = isend(to, send_bytes, tag);
  wait(r);
  wait(s);
}

void CollectiveContext::wait(const RequestPtr& r)
{
  partner_wait_s_ += board_.wait(r);
  if (timeline_ != nullptr && r->kind == Request::Kind::Recv && not r->cancelled)
    timeline_->flow_end(world_rank_, r->message, sg4::Engine::get_clock());
}

void CollectiveContext::wait_all(const std::vector<RequestPtr>& rs)
{
  for (const RequestPtr& r : rs)
    wait(r);
}

void CollectiveContext::compute(double flops)
{
  if (flops > 0 && compute_)
    compute_(flops);
}
NodeMap::NodeMap(std::vector<int> node_of_rank, std::vector<std::uint64_t> cache_bytes_of_rank)
    : node_of_rank_(std::move(node_of_rank)), cache_bytes_of_rank_(std::move(cache_bytes_of_rank))
{
  if (node_of_rank_.size() != cache_bytes_of_rank_.size())
    throw std::invalid_argument("NodeMap: " + std::to_string(node_of_rank_.size()) + " nodes for " +
                                std::to_string(cache_bytes_of_rank_.size()) + " cache sizes");
}

std::uint64_t NodeMap::cache_bytes(int world_rank) const
{
  return cache_bytes_of_rank_.at(static_cast<std::size_t>(world_rank));
}

const std::vector<int>& NodeMap::node_ranks(const Communicator& comm, int world_rank)
{
  const int node = node_of_rank_.at(static_cast<std::size_t>(world_rank));
  auto [it, created] = node_ranks_.try_emplace({comm.id, node});
  if (created)
    for (int r = 0; r < comm.size(); ++r)
      if (node_of_rank_.at(static_cast<std::size_t>(comm.world_ranks[static_cast<std::size_t>(r)])) == node)
        it->second.push_back(r);
  return it->second;
}

std::uint64_t CollectiveContext::node_cache_bytes() const
{
  return nodes_ == nullptr ? 0 : nodes_->cache_bytes(world_rank_);
}

const std::vector<int>& CollectiveContext::node_ranks()
{
  if (nodes_ != nullptr)
    return nodes_->node_ranks(comm_, world_rank_);
  only_me_.assign(1, me_);
  return only_me_;
}
}  // namespace gridcast::emulator
