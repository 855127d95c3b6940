#include "sim/network/packet_network.h"

#include <algorithm>

#include "base/error.h"

namespace podsim::sim {

PacketNetwork::PacketNetwork(const topo::Topology& topology, PacketOptions options)
    : topology_(topology),
      options_(options),
      free_ps_(topology.links().size(), 0),
      link_bytes_(topology.links().size(), 0.0),
      link_busy_ps_(topology.links().size(), 0) {
  if (options.packet_bytes < 1) {
    throw Error("packet network: packet_bytes must be >= 1, got " + std::to_string(options.packet_bytes));
  }
  for (const topo::Link& link : topology.links()) {
    if (!(link.bandwidth.value > 0)) {
      throw Error("packet network: link " + std::to_string(link.id) + " of " + topology.name() +
                  " has bandwidth " + std::to_string(link.bandwidth.value) + " B/s (must be > 0)");
    }
    bandwidth_.push_back(link.bandwidth.value);
    latency_.push_back(link.latency.picos());
    full_packet_ps_.push_back(TransferTime(Bytes{options.packet_bytes}, link.bandwidth).picos());
  }
}

void PacketNetwork::Push(int64_t time_ps, EventKind kind, int32_t index) {
  events_.Push(time_ps, Event{kind, index});
}

Time PacketNetwork::NextEventTime() const {
  return events_.empty() ? Time::Max() : Time::Picos(events_.TopKey());
}

void PacketNetwork::Start(TransferId id, int64_t src_core, int64_t dst_core, Bytes bytes, Time now) {
  internal::CheckStart("packet", topology_, src_core, dst_core, bytes, now, time_, NextEventTime());
  time_ = now;
  // Into buffers kept across calls: no allocation per transfer (a pod-wide all-to-all starts
  // millions).
  const size_t num_paths = topology_.RouteSplitInto(src_core, dst_core, route_paths_);
  if (num_paths == 0)
    throw Error("packet network: topology " + topology_.name() + " returned no path");
  const std::vector<topo::Topology::WeightedPath>& paths = route_paths_;
  internal::SplitBytesInto(bytes.value, paths.data(), num_paths, split_parts_);
  const std::vector<int64_t>& parts = split_parts_;
  int32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<int32_t>(slots_.size());
    slots_.emplace_back();
  }
  slots_[static_cast<size_t>(slot)] =
      TransferSlot{id, static_cast<int32_t>(num_paths), static_cast<int32_t>(num_paths)};
  for (size_t p = 0; p < num_paths; ++p) {
    int32_t s;
    if (!free_streams_.empty()) {
      s = free_streams_.back();
      free_streams_.pop_back();
    } else {
      s = static_cast<int32_t>(streams_.size());
      streams_.emplace_back();
    }
    Stream& stream = streams_[static_cast<size_t>(s)];
    stream.path = static_cast<int64_t>(paths_.size());
    for (int64_t l : paths[p].links) {
      if (l < 0 || l >= static_cast<int64_t>(bandwidth_.size())) {
        throw Error("packet network: route of " + topology_.name() + " names link " + std::to_string(l) +
                    " outside [0, " + std::to_string(bandwidth_.size()) + ")");
      }
      paths_.push_back(static_cast<int32_t>(l));
    }
    stream.hops = static_cast<int32_t>(paths[p].links.size());
    stream.slot = slot;
    stream.bytes = parts[p];
    stream.packets = std::max<int64_t>(1, (parts[p] + options_.packet_bytes - 1) / options_.packet_bytes);
    stream.injected = 0;
    stream.delivered = 0;
    if (stream.hops == 0) {
      Push(now.picos(), EventKind::kStreamDone, s);  // same core: nothing to move
      OnSent(slot);                                  // (reported with the next Advance)
    } else {
      Inject(s, now.picos());
    }
  }
}

// Hands the stream's next packet to its first link's queue at time_ps.
void PacketNetwork::Inject(int32_t stream_index, int64_t time_ps) {
  Stream& stream = streams_[static_cast<size_t>(stream_index)];
  const int64_t k = stream.injected++;
  const int64_t bytes = k + 1 < stream.packets ? options_.packet_bytes : stream.bytes - k * options_.packet_bytes;
  int32_t p;
  if (!free_packets_.empty()) {
    p = free_packets_.back();
    free_packets_.pop_back();
  } else {
    p = static_cast<int32_t>(packets_.size());
    packets_.emplace_back();
  }
  packets_[static_cast<size_t>(p)] =
      Packet{stream.path, stream_index, 0, stream.hops, bytes, time_ps};
  Push(time_ps, EventKind::kArrive, p);
}

// The packet's head is at the chip before hop packet.hop at now_ps: queue it on that link.
void PacketNetwork::OnArrive(int32_t packet_index, int64_t now_ps) {
  Packet& packet = packets_[static_cast<size_t>(packet_index)];
  const size_t l = static_cast<size_t>(paths_[static_cast<size_t>(packet.path + packet.hop)]);
  const int64_t serialise = packet.bytes == options_.packet_bytes ? full_packet_ps_[l]
                            : packet.bytes > 0 ? TransferTime(Bytes{packet.bytes}, BytesPerSecond{bandwidth_[l]}).picos()
                                               : 0;
  // FIFO: events arrive in time order, so the link serves packets in arrival order.
  const int64_t start = std::max(now_ps, free_ps_[l]);
  // Store-and-forward: tail_ps == now_ps <= start. Cut-through: the link cannot send the tail
  // before it has arrived.
  // Time arithmetic is checked: a queue that grows past the clock's range throws, not wraps.
  const int64_t end = std::max((Time::Picos(start) + Time::Picos(serialise)).picos(), packet.tail_ps);
  free_ps_[l] = end;
  link_bytes_[l] += static_cast<double>(packet.bytes);
  link_busy_ps_[l] += serialise;
  if (packet.hop == 0) {
    const Stream& stream = streams_[static_cast<size_t>(packet.stream)];
    if (stream.injected < stream.packets) {
      Inject(packet.stream, start);
    } else {
      Push(end, EventKind::kSent, stream.slot);  // the stream's last packet leaves the source
    }
  }
  // Inject may grow packets_: refer to the packet by index from here on.
  Packet& moved = packets_[static_cast<size_t>(packet_index)];
  const int64_t flight = latency_[l];
  moved.tail_ps = (Time::Picos(end) + Time::Picos(flight)).picos();
  if (moved.hop + 1 < moved.hops) {
    ++moved.hop;
    const int64_t head = options_.switching == PacketSwitching::kCutThrough
                             ? (Time::Picos(start) + Time::Picos(flight)).picos()
                             : moved.tail_ps;
    Push(head, EventKind::kArrive, packet_index);
  } else {
    Push(moved.tail_ps, EventKind::kDeliver, packet_index);
  }
}

void PacketNetwork::OnStreamDone(int32_t stream_index, std::vector<TransferId>* done) {
  const int32_t slot = streams_[static_cast<size_t>(stream_index)].slot;
  free_streams_.push_back(stream_index);
  // No stream left: the paths' capacity is kept for the next collective.
  if (free_streams_.size() == streams_.size()) paths_.clear();
  TransferSlot& transfer = slots_[static_cast<size_t>(slot)];
  if (--transfer.pending == 0) {
    done->push_back(transfer.id);
    free_slots_.push_back(slot);
  }
}

std::vector<TransferId> PacketNetwork::Advance(Time t) {
  internal::CheckAdvance("packet", t, time_, NextEventTime());
  time_ = t;
  std::vector<TransferId> done;
  while (!events_.empty() && events_.TopKey() == t.picos()) {
    const Event event = events_.Pop();
    ++events_processed_;
    // Simultaneous events are the common case on symmetric traffic: start loading the next
    // ones' packets and paths, scattered in memory, while this one is handled.
    if (const Event* next = events_.PeekSameKey(8);
        next != nullptr &&
        (next->kind == EventKind::kArrive || next->kind == EventKind::kDeliver)) {
      __builtin_prefetch(&packets_[static_cast<size_t>(next->index)]);
    }
    if (const Event* next = events_.PeekSameKey(3); next != nullptr && next->kind == EventKind::kArrive) {
      const Packet& packet = packets_[static_cast<size_t>(next->index)];
      __builtin_prefetch(&paths_[static_cast<size_t>(packet.path + packet.hop)]);
    }
    switch (event.kind) {
      case EventKind::kArrive:
        OnArrive(event.index, t.picos());
        break;
      case EventKind::kDeliver: {
        const int32_t s = packets_[static_cast<size_t>(event.index)].stream;
        free_packets_.push_back(event.index);
        Stream& stream = streams_[static_cast<size_t>(s)];
        if (++stream.delivered == stream.packets) OnStreamDone(s, &done);
        break;
      }
      case EventKind::kStreamDone:
        OnStreamDone(event.index, &done);
        break;
      case EventKind::kSent:
        OnSent(event.index);
        break;
    }
  }
  std::sort(done.begin(), done.end());
  return done;
}

void PacketNetwork::OnSent(int32_t slot) {
  TransferSlot& transfer = slots_[static_cast<size_t>(slot)];
  if (--transfer.unsent == 0) sent_.push_back(transfer.id);
}

std::vector<TransferId> PacketNetwork::TakeSent() {
  std::vector<TransferId> sent;
  sent.swap(sent_);
  std::sort(sent.begin(), sent.end());
  return sent;
}

}  // namespace podsim::sim
