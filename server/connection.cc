// Connection I/O and dispatch; see connection.h.
#include "connection.h"

#include <algorithm>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstring>
#include <new>
#include <utility>

#include "command_clock.h"
#include "debug_commands.h"
#include "server.h"
#include "server_state.h"

namespace rl::server {
namespace asio = boost::asio;
namespace {

constexpr size_t kInitialReadBuffer = 16 * 1024;
constexpr size_t kKeepBufferCapacity = 1 << 20;  // larger buffers are released once drained
// Arguments in one command once authenticated. No rl command takes more than ~60 (RL.CHECK with
// eight limits); the parser keeps 16 bytes per pending argument outside the input buffer, so
// Redis's 1 M would let one half-sent command hold 16 MB that no buffer limit counts.
constexpr size_t kMaxArgs = 4096;

std::string EndpointString(const asio::ip::tcp::endpoint& ep) {
  std::string s = ep.address().to_string();
  if (ep.address().is_v6()) s = "[" + s + "]";
  return s + ":" + std::to_string(ep.port());
}

// An HTTP request sent to the Redis port: Redis closes such connections without replying
// (cross-protocol scripting), and so do we.
bool LooksLikeHttp(absl::Span<const std::string_view> args) {
  if (EqualsIgnoreCase(args[0], "post") || EqualsIgnoreCase(args[0], "host:")) return true;
  return args.size() >= 2 && EqualsIgnoreCase(args[0], "get") && !args[1].empty() &&
         args[1][0] == '/';
}

}  // namespace

Connection::Connection(Worker* worker, asio::ip::tcp::socket socket)
    : worker_(worker),
      socket_(std::move(socket)),
      pause_timer_(socket_.get_executor()),
      writer_(&out_),
      txn_(worker->state(), worker, &session_) {
  ServerState& state = worker_->state();
  session_.id = state.next_client_id.fetch_add(1, std::memory_order_relaxed);
  session_.authenticated = state.config.requirepass.empty();
  session_.created_ms = state.clock->NowMs();
  session_.last_active_ms.store(session_.created_ms, std::memory_order_relaxed);
  session_.fd = socket_.native_handle();
  boost::system::error_code ec;
  auto remote = socket_.remote_endpoint(ec);
  if (!ec) session_.addr = EndpointString(remote);
  session_.debug_allowed = DebugAllowed(state.config, !ec && remote.address().is_loopback());
  auto local = socket_.local_endpoint(ec);
  if (!ec) session_.laddr = EndpointString(local);
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  if (!in_.Resize(kInitialReadBuffer)) throw std::bad_alloc();  // as the vector did
  // The first buffer of every client is allowed (maxclients bounds them); growth is checked.
  state.global.client_query_bytes.fetch_add(static_cast<int64_t>(in_.size()),
                                            std::memory_order_relaxed);
  args_.reserve(16);
  UpdateParserLimits();
  worker_->Register(this);
  state.clients.Add(&session_);  // last: CLIENT LIST may read the session from now on
  state.global.total_connections.fetch_add(1, std::memory_order_relaxed);
}

Connection::~Connection() {
  worker_->state().clients.Remove(&session_);  // first: nothing below may be read by others
  GlobalStats& global = worker_->state().global;
  global.connected_clients.fetch_sub(1, std::memory_order_relaxed);
  global.client_query_bytes.fetch_sub(static_cast<int64_t>(in_.size()), std::memory_order_relaxed);
  worker_->Unregister(this);
}

void Connection::Start() { DoRead(); }

void Connection::UpdateParserLimits() {
  // New limits apply from the command after the one that changed them: whatever LookAhead read
  // past that one under the old limits is read again.
  parser_.Reset();
  have_next_ = false;
  // Smaller limits until the client proves it knows the password (as Redis does).
  if (!session_.authenticated) return parser_.set_limits(resp::ParserLimits::Unauthenticated());
  resp::ParserLimits limits;
  limits.max_args = kMaxArgs;
  limits.max_bulk = worker_->state().config.proto_max_bulk_len;
  parser_.set_limits(limits);
}

void Connection::DoRead() {
  if (read_closed_ || closed_) return;
  if (in_end_ == in_.size()) {
    // Full: move the unparsed tail to the front, or grow when it fills the whole buffer.
    if (in_start_ > 0) {
      std::memmove(in_.data(), in_.data() + in_start_, in_end_ - in_start_);
      in_end_ -= in_start_;
      in_start_ = 0;
    } else if (!GrowInput()) {
      return;
    }
  }
  session_.query_used.store(in_end_ - in_start_, std::memory_order_relaxed);
  session_.query_size.store(in_.size(), std::memory_order_relaxed);
  socket_.async_read_some(
      asio::buffer(in_.data() + in_end_, in_.size() - in_end_),
      WithMemory(&read_memory_, [self = shared_from_this()](const boost::system::error_code& ec,
                                                            size_t n) { self->OnRead(ec, n); }));
}

void Connection::OnRead(const boost::system::error_code& ec, size_t n) {
  if (closed_) return;
  if (ec) {
    // EOF or error: replies already computed still go out, then the socket closes.
    read_closed_ = true;
    if (!write_in_flight_ && out_.empty()) CloseNow();
    return;
  }
  session_.last_active_ms.store(worker_->state().clock->NowMs(), std::memory_order_relaxed);
  in_end_ += n;
  OnInput();
}

void Connection::OnInput() {
  if (!ProcessInput()) return;
  if (session_.pause_ms > 0) return Pause();
  MaybeWrite();
  if (closed_) return;
  if (read_closed_) {
    if (!write_in_flight_) CloseNow();
    return;
  }
  if (in_start_ == in_end_) {
    in_start_ = in_end_ = 0;
    const size_t old_size = in_.size();
    if (old_size > kKeepBufferCapacity && in_.Resize(kInitialReadBuffer)) {
      worker_->state().global.client_query_bytes.fetch_sub(
          static_cast<int64_t>(old_size - kInitialReadBuffer), std::memory_order_relaxed);
    }
  }
  DoRead();
}

void Connection::Pause() {
  pause_timer_.expires_after(std::chrono::milliseconds(std::exchange(session_.pause_ms, 0)));
  pause_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (!ec && !self->closed_) self->OnInput();
  });
}

bool Connection::GrowInput() {
  ServerState& state = worker_->state();
  const size_t limit = state.config.client_query_limit;
  const size_t grown = std::min(in_.size() * 2, limit);
  const auto delta = static_cast<int64_t>(grown - in_.size());
  // Reserve the bytes in the server-wide total first, so concurrent growth cannot overshoot.
  const int64_t total = state.global.client_query_bytes.fetch_add(delta, std::memory_order_relaxed);
  if (in_.size() >= limit ||
      total + delta > static_cast<int64_t>(state.config.client_query_total)) {
    // As Redis with client-query-buffer-limit: the client is closed, nobody else notices.
    state.global.client_query_bytes.fetch_sub(delta, std::memory_order_relaxed);
    state.global.query_limit_disconnects.fetch_add(1, std::memory_order_relaxed);
    CloseNow();
    return false;
  }
  if (!in_.Resize(grown)) {
    state.global.client_query_bytes.fetch_sub(delta, std::memory_order_relaxed);
    CloseNow();
    return false;
  }
  return true;
}

bool Connection::ProcessInput() {
  ServerState& state = worker_->state();
  worker_->stats().StartTiming();
  // The gate slot an RL.* command of this batch takes is let go when the batch is done.
  struct GateRelease {
    Worker* worker;
    ~GateRelease() { worker->ReleaseGate(); }
  } gate_release{worker_};
  while (in_start_ < in_end_ && !read_closed_) {
    size_t consumed = 0;
    std::string_view buf(in_.data() + in_start_, in_end_ - in_start_);
    resp::ParseStatus status = resp::ParseStatus::kCommand;
    const CommandSpec* found = nullptr;
    const bool parsed_ahead = have_next_;
    if (parsed_ahead) {
      have_next_ = false;
      args_.swap(next_args_);
      consumed = next_consumed_;
      found = next_found_;
    } else {
      status = parser_.Parse(buf, &consumed, &args_);
    }
    if (status == resp::ParseStatus::kIncomplete) break;
    if (status == resp::ParseStatus::kError) {
      // Reply the error, then close this connection only.
      std::string msg = "ERR " + parser_.error();
      writer_.Error(msg);
      state.global.protocol_errors.fetch_add(1, std::memory_order_relaxed);
      read_closed_ = true;
      break;
    }
    if (!parsed_ahead && !args_.empty()) found = FindCommand(args_[0]);
    // Multibulk commands only: the arguments of an inline one may live in the parser, which the
    // next parse would overwrite.
    if (buf[0] == '*' && consumed < buf.size() && buf[consumed] == '*') {
      LookAhead(buf.substr(consumed));
    }
    if (!args_.empty()) Execute(absl::MakeConstSpan(args_), found);
    in_start_ += consumed;
    if (closed_) return false;
    if (session_.pause_ms > 0) break;  // the rest waits for the pause (OnInput)
    if (PendingOutput() > state.config.client_output_limit) {
      state.global.output_limit_disconnects.fetch_add(1, std::memory_order_relaxed);
      CloseNow();
      return false;
    }
  }
  // A command parsed ahead but not run (a pause, QUIT, a closed connection) is parsed again in its
  // turn, from the parser's clean state after a whole command.
  have_next_ = false;
  return !closed_;
}

void Connection::LookAhead(std::string_view rest) {
  size_t consumed = 0;
  if (parser_.Parse(rest, &consumed, &next_args_) != resp::ParseStatus::kCommand) return;
  have_next_ = true;
  next_consumed_ = consumed;
  const CommandSpec* spec = next_found_ = next_args_.empty() ? nullptr : FindCommand(next_args_[0]);
  if (!session_.authenticated || txn_.active()) return;
  if (spec != nullptr && spec->prefetch != nullptr) {
    CommandContext ctx{next_args_,       writer_,       session_, worker_->state(),
                       worker_->stats(), &limit_cache_, &txn_,    &policy_cache_};
    spec->prefetch(ctx);
  }
}

void Connection::Execute(absl::Span<const std::string_view> args, const CommandSpec* found) {
  ServerState& state = worker_->state();
  WorkerStats& stats = worker_->stats();
  stats.RecordCommand();
  if (LooksLikeHttp(args)) {
    out_.clear();
    CloseNow();
    return;
  }
  if (txn_.active() && txn_.InterceptExec(found, args, writer_)) return;
  const CommandSpec* spec = state.commands.Resolve(found, args, session_, writer_);
  if (spec == nullptr) {
    if (txn_.active()) txn_.Fail();  // Redis: EXEC then answers EXECABORT
    return;
  }
  session_.last_command.store(spec, std::memory_order_relaxed);
  if (txn_.active() && !(spec->flags & kCmdNoQueue)) return txn_.Queue(spec, args, writer_);
  // RL.* commands run between transactions, never inside another client's.
  if (spec->family == kFamilyRl) worker_->HoldGate();
  bool was_authenticated = session_.authenticated;
  CommandContext ctx{args, writer_, session_, state, stats, &limit_cache_, &txn_, &policy_cache_};
  {
    CommandClock::Scope now(stats.mark_ns());  // the limiter's `now`, read already
    spec->handler(ctx);
  }
  stats.RecordLatency(spec->family);
  if (session_.authenticated != was_authenticated) UpdateParserLimits();
  if (session_.close_after_reply) read_closed_ = true;
}

const CommandSpec* Connection::FindCommand(std::string_view name) {
  if (last_command_ != nullptr && name.size() == last_command_len_ &&
      std::memcmp(name.data(), last_command_name_.data(), name.size()) == 0) {
    return last_command_;
  }
  const CommandSpec* spec = worker_->state().commands.Find(name);
  if (spec != nullptr && name.size() <= last_command_name_.size()) {
    std::memcpy(last_command_name_.data(), name.data(), name.size());
    last_command_len_ = name.size();
    last_command_ = spec;
  }
  return spec;
}

void Connection::MaybeWrite() {
  if (write_in_flight_ || out_.empty() || closed_) return;
  std::swap(out_, writing_);
  out_.clear();
  write_in_flight_ = true;
  session_.output_pending.store(writing_.size(), std::memory_order_relaxed);
  asio::async_write(
      socket_, asio::buffer(writing_),
      WithMemory(&write_memory_, [self = shared_from_this()](const boost::system::error_code& ec,
                                                             size_t n) { self->OnWrite(ec, n); }));
}

void Connection::OnWrite(const boost::system::error_code& ec, size_t n) {
  write_in_flight_ = false;
  writing_.clear();
  session_.output_pending.store(out_.size(), std::memory_order_relaxed);
  if (writing_.capacity() > kKeepBufferCapacity) std::string().swap(writing_);
  if (closed_) return;
  if (ec) {
    CloseNow();
    return;
  }
  if (!out_.empty()) {
    MaybeWrite();
  } else if (read_closed_) {
    CloseNow();
  }
}

void Connection::Shutdown() {
  if (closed_) return;
  read_closed_ = true;
  pause_timer_.cancel();  // a paused reply goes out now
  boost::system::error_code ec;
  // Wakes the pending read with EOF; the write in flight (if any) still completes.
  socket_.shutdown(asio::ip::tcp::socket::shutdown_receive, ec);
  if (!write_in_flight_) {
    MaybeWrite();
    if (!write_in_flight_) CloseNow();
  }
}

void Connection::CloseNow() {
  if (closed_) return;
  closed_ = true;
  read_closed_ = true;
  pause_timer_.cancel();
  boost::system::error_code ec;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  socket_.close(ec);
}

}  // namespace rl::server
