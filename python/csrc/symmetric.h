// Tensors in symmetric memory: a pool taken from the symmetric heap once, collectively, when the default
// group starts Tessera, and carved up locally (first fit) so that allocating and freeing a tensor is not
// collective (Python frees tensors whenever their last reference goes). Collectives whose buffers lie in
// symmetric memory on every member take Tessera's zero-copy paths.
#pragma once
#include <ATen/ATen.h>

#include <cstddef>

namespace tessera_torch {

// Collective over all PEs (shmem_malloc): reserves up to `bytes` (halving while the heap lacks room, down to
// 16 MiB; 0 if even that fails).
void pool_reserve(size_t bytes);
size_t pool_bytes();
// The pool's first byte: the same symmetric address on every PE (null before pool_reserve). Offsets from it
// name a block to peers.
char* pool_base();
size_t pool_free_bytes();
// A tensor of the given shape and type in the pool; throws a c10::Error naming the size and the free space
// when it does not fit. Its storage returns to the pool when the tensor is freed.
at::Tensor symmetric_empty(at::IntArrayRef sizes, at::ScalarType dtype);
bool is_symmetric(const at::Tensor& t);

}  // namespace tessera_torch
