#include "coll/single_copy.h"

#include <cerrno>
#include <cstring>

#include "base/config.h"
#include "base/log.h"
#include "coll/comm.h"
#include "sync/peer.h"
#include "transport/shm/peer_copy.h"

namespace tessera::coll {
namespace {
const config::Var<bool> kCma{
    "TESSERA_COLL_CMA", true,
    "Let large collectives copy straight from peers' buffers with process_vm_readv (single copy) when "
    "every member of the communicator can; 0 keeps every collective on the staged algorithms"};

// Both directions: `write` moves local -> member m, else member m -> local.
void copy_with(const Communicator& c, int m, char* local, char* remote, size_t bytes, bool write) {
  const int e = transport::shm::peer_copy(c.pids[m], local, remote, bytes, write);
  if (e == 0) [[likely]] return;
  const char* call = write ? "process_vm_writev" : "process_vm_readv";
  if (e == ESRCH)  // the member's process is gone: its death, not this copy, is what ends the job
    sync::peer_vanished(fmt::format("{}: rank {} (PE {}, pid {}) is gone ({} failed: {})", c.name, m, c.world[m],
                                    c.pids[m], call, std::strerror(e)));
  log::fatal("{}: {} {} bytes at {} {} rank {} (PE {}, pid {}) with {} failed: {} "
             "(set TESSERA_COLL_CMA=0 to use the staged algorithms)",
             c.name, write ? "writing" : "reading", bytes, static_cast<const void*>(remote), write ? "of" : "from", m,
             c.world[m], c.pids[m], call, std::strerror(e));
}
}  // namespace

bool cma_enabled() { return kCma.get(); }

void cma_read(const Communicator& c, int m, void* dst, const void* src, size_t bytes) {
  copy_with(c, m, static_cast<char*>(dst), const_cast<char*>(static_cast<const char*>(src)), bytes, false);
}

void cma_write(const Communicator& c, int m, void* dst, const void* src, size_t bytes) {
  copy_with(c, m, const_cast<char*>(static_cast<const char*>(src)), static_cast<char*>(dst), bytes, true);
}

}  // namespace tessera::coll
