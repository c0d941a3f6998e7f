// The one byte reader and writer of the engine's persisted forms (rl-server's snapshots,
// rl::KeyState's encoding): little-endian integers of 1 to 8 bytes, bounds-checked on read so
// hostile input can only fail a read, never overrun.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace rl::internal {

class ByteWriter {
 public:
  explicit ByteWriter(std::string* out) : out_(out) {}
  // The low `bytes` bytes of `v`, least significant first.
  void PutUint(uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out_->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  template <typename T>
  void Put(T v) {
    static_assert(std::is_integral_v<T>);
    PutUint(static_cast<uint64_t>(v), sizeof(T));
  }

 private:
  std::string* out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view data) : data_(data) {}
  // Reads an unsigned integer of `bytes` bytes; false (nothing read) when fewer are left.
  bool GetUint(int bytes, uint64_t* v) {
    if (data_.size() - pos_ < static_cast<size_t>(bytes)) return false;
    uint64_t x = 0;
    for (int i = 0; i < bytes; ++i) {
      x |= uint64_t{static_cast<unsigned char>(data_[pos_ + i])} << (8 * i);
    }
    pos_ += bytes;
    *v = x;
    return true;
  }
  template <typename T>
  bool Get(T* v) {
    static_assert(std::is_integral_v<T>);
    uint64_t x;
    if (!GetUint(sizeof(T), &x)) return false;
    *v = static_cast<T>(x);
    return true;
  }
  size_t left() const { return data_.size() - pos_; }
  size_t pos() const { return pos_; }
  bool done() const { return pos_ == data_.size(); }
  void Skip(size_t n) { pos_ += n; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

}  // namespace rl::internal
