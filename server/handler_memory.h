// Per-connection memory for Asio completion handlers. Asio allocates each pending operation
// through the handler's associated allocator; its default per-thread cache holds one block, so
// with a read and a write outstanding on a connection every command batch would call malloc.
// Each connection owns one block per outstanding operation (read, write) instead.
#pragma once

#include <cstddef>
#include <new>
#include <utility>

namespace rl::server {

class HandlerMemory {
 public:
  HandlerMemory() = default;
  HandlerMemory(const HandlerMemory&) = delete;
  HandlerMemory& operator=(const HandlerMemory&) = delete;

  void* Allocate(size_t size) {
    if (!in_use_ && size <= sizeof(storage_)) {
      in_use_ = true;
      return &storage_;
    }
    return ::operator new(size);
  }
  void Deallocate(void* p) {
    if (p == &storage_) {
      in_use_ = false;
    } else {
      ::operator delete(p);
    }
  }

 private:
  alignas(std::max_align_t) unsigned char storage_[512];
  bool in_use_ = false;
};

template <typename T>
class HandlerAllocator {
 public:
  using value_type = T;
  explicit HandlerAllocator(HandlerMemory* memory) : memory_(memory) {}
  template <typename U>
  HandlerAllocator(const HandlerAllocator<U>& other) noexcept : memory_(other.memory_) {}
  T* allocate(size_t n) const { return static_cast<T*>(memory_->Allocate(sizeof(T) * n)); }
  void deallocate(T* p, size_t) const { memory_->Deallocate(p); }
  bool operator==(const HandlerAllocator& other) const noexcept { return memory_ == other.memory_; }
  bool operator!=(const HandlerAllocator& other) const noexcept { return memory_ != other.memory_; }

 private:
  template <typename>
  friend class HandlerAllocator;
  HandlerMemory* memory_;
};

// Wraps a handler so Asio finds HandlerAllocator through allocator_type/get_allocator().
template <typename Handler>
class AllocatingHandler {
 public:
  using allocator_type = HandlerAllocator<Handler>;
  AllocatingHandler(HandlerMemory* memory, Handler handler)
      : memory_(memory), handler_(std::move(handler)) {}
  allocator_type get_allocator() const noexcept { return allocator_type(memory_); }
  template <typename... Args>
  void operator()(Args&&... args) {
    handler_(std::forward<Args>(args)...);
  }

 private:
  HandlerMemory* memory_;
  Handler handler_;
};

template <typename Handler>
AllocatingHandler<Handler> WithMemory(HandlerMemory* memory, Handler handler) {
  return AllocatingHandler<Handler>(memory, std::move(handler));
}

}  // namespace rl::server
