// The allocator behind caller-visible state memory (KeyState blocks, sliding-log buffers): malloc
// by default, Redis's allocator inside rl.so (see rl::SetStateAllocator). Allocation failure is
// not a request-path error: it throws std::bad_alloc, as operator new does.
#pragma once

#include <cstddef>

namespace rl::internal {

void* StateAlloc(size_t bytes);
void* StateRealloc(void* p, size_t bytes);
void StateFree(void* p);

}  // namespace rl::internal
