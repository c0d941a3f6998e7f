// The snapshot container: encode, decode (bounds-checked over untrusted bytes) and the policies a
// load restores; see snapshot_format.h.
#include "snapshot_format.h"

#include <fmt/core.h>

#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "text.h"

namespace rl::server {
namespace {

constexpr char kMagic[8] = {'R', 'L', 'S', 'R', 'V', 'S', 'N', 'P'};
constexpr uint32_t kVersion = 1;
constexpr size_t kMaxNameOrSpec = 1 << 16;

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

void PutString(std::string* out, std::string_view s) {
  Put<uint32_t>(out, static_cast<uint32_t>(s.size()));
  out->append(s);
}

// Bounds-checked reads over untrusted bytes.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  template <typename T>
  bool Get(T* v) {
    if (left() < sizeof(T)) return false;
    std::memcpy(v, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool GetBytes(size_t n, std::string_view* out) {
    if (left() < n) return false;
    *out = data_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  bool GetString(std::string* out) {
    uint32_t n;
    std::string_view bytes;
    if (!Get(&n) || n > kMaxNameOrSpec || !GetBytes(n, &bytes)) return false;
    out->assign(bytes);
    return true;
  }
  size_t left() const { return data_.size() - pos_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

}  // namespace

void EncodeSnapshot(int64_t saved_wall_ms, uint64_t states,
                    const std::vector<SavedPolicy>& policies, std::string_view state,
                    std::string* prefix, std::string* suffix) {
  prefix->assign(kMagic, sizeof(kMagic));
  Put<uint32_t>(prefix, kVersion);
  Put<uint32_t>(prefix, 0);
  Put<int64_t>(prefix, saved_wall_ms);
  Put<uint64_t>(prefix, states);
  Put<uint32_t>(prefix, static_cast<uint32_t>(policies.size()));
  for (const SavedPolicy& p : policies) {
    Put<uint8_t>(prefix, p.runtime ? 1 : 0);
    PutString(prefix, p.name);
    PutString(prefix, p.spec);
  }
  Put<uint64_t>(prefix, state.size());
  XXH64_state_t* h = XXH64_createState();
  XXH64_reset(h, 0);
  XXH64_update(h, prefix->data(), prefix->size());
  XXH64_update(h, state.data(), state.size());
  uint64_t sum = XXH64_digest(h);
  XXH64_freeState(h);
  suffix->clear();
  Put<uint64_t>(suffix, sum);
}

absl::Status DecodeSnapshot(std::string_view data, DecodedSnapshot* out) {
  if (data.size() < sizeof(kMagic) + 8 || std::memcmp(data.data(), kMagic, sizeof(kMagic)) != 0) {
    return absl::InvalidArgumentError("not an rl-server snapshot (bad magic or empty file)");
  }
  uint64_t sum;
  std::memcpy(&sum, data.data() + data.size() - 8, 8);
  std::string_view body = data.substr(0, data.size() - 8);
  if (XXH64(body.data(), body.size(), 0) != sum) {
    return absl::DataLossError(
        fmt::format("checksum mismatch ({} bytes; truncated or corrupt)", data.size()));
  }
  Reader r(body.substr(sizeof(kMagic)));
  uint32_t version, flags, count;
  if (!r.Get(&version) || !r.Get(&flags)) return absl::DataLossError("header truncated");
  if (version != kVersion) {
    return absl::InvalidArgumentError(fmt::format("unsupported snapshot version {}", version));
  }
  if (!r.Get(&out->saved_wall_ms) || !r.Get(&out->states) || !r.Get(&count)) {
    return absl::DataLossError("header truncated");
  }
  if (count > r.left() / 9) return absl::DataLossError("bad policy count");
  out->policies.clear();
  for (uint32_t i = 0; i < count; ++i) {
    SavedPolicy p;
    uint8_t runtime;
    if (!r.Get(&runtime) || !r.GetString(&p.name) || !r.GetString(&p.spec)) {
      return absl::DataLossError("policy record truncated");
    }
    p.runtime = runtime != 0;
    out->policies.push_back(std::move(p));
  }
  uint64_t state_len;
  if (!r.Get(&state_len) || state_len != r.left() || !r.GetBytes(state_len, &out->state)) {
    return absl::DataLossError("engine state length does not match the file");
  }
  return absl::OkStatus();
}

absl::Status ParseSnapshot(std::string_view data,
                           const std::vector<std::pair<std::string, std::string>>& config_policies,
                           DecodedSnapshot* out, std::vector<rl::Policy>* restore) {
  restore->clear();
  absl::Status st = DecodeSnapshot(data, out);
  if (!st.ok()) return st;
  // Parse every policy before anything changes, so a bad file changes nothing.
  for (const SavedPolicy& p : out->policies) {
    if (!p.runtime) continue;  // the config file is authoritative for its own policies
    bool in_file = false;
    for (const auto& [name, spec] : config_policies) in_file = in_file || name == p.name;
    if (in_file) continue;
    // Saved text keeps the meaning it had when it was written (a bare number was milliseconds).
    auto policy =
        rl::ParsePolicy(p.name, std::string_view(p.spec), rl::BareDuration::kMilliseconds);
    if (!policy.ok()) {
      return absl::DataLossError(
          fmt::format("policy '{}': {}", p.name, ToStd(policy.status().message())));
    }
    restore->push_back(std::move(*policy));
  }
  return absl::OkStatus();
}

}  // namespace rl::server
