// CANN SHMEM host names (include/aclshmem.h) on top of the OpenSHMEM C API.
//
// Bootstrap: a CANN program passes its rank, size and a rendezvous address; Tessera's PEs are started and
// wired by tessera-run, so aclshmemx_init_attr checks that the rank and size the program expects match the
// job's (a mismatch is reported and returns ACLSHMEM_INVALID_PARAM) and uses local_mem_size as the symmetric
// heap size unless SHMEM_SYMMETRIC_SIZE / TESSERA_SYMMETRIC_SIZE is set.
#include <aclshmem.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "base/log.h"
#include "pgas/runtime.h"

using namespace tessera;

extern "C" {

int aclshmemx_set_attr(int my_pe, int n_pes, uint64_t local_mem_size, const char* ip_port,
                       aclshmemx_init_attr_t* attributes) {
  if (!attributes) return ACLSHMEM_INVALID_PARAM;
  std::memset(attributes, 0, sizeof *attributes);
  attributes->my_pe = my_pe;
  attributes->n_pes = n_pes;
  attributes->local_mem_size = local_mem_size;
  if (ip_port) std::strncpy(attributes->ip_port, ip_port, ACLSHMEM_MAX_IP_PORT_LEN - 1);
  attributes->option_attr.version = (1 << 16) + static_cast<int>(sizeof(aclshmem_init_optional_attr_t));
  attributes->option_attr.data_op_engine_type = ACLSHMEM_DATA_OP_MTE;
  attributes->option_attr.shm_init_timeout = attributes->option_attr.shm_create_timeout =
      attributes->option_attr.control_operation_timeout = 120;
  return ACLSHMEM_SUCCESS;
}

int aclshmemx_get_uniqueid(aclshmemx_uniqueid_t* uid) {
  if (!uid) return ACLSHMEM_INVALID_PARAM;
  std::memset(uid, 0, sizeof *uid);
  uid->version = (1 << 16) + static_cast<int32_t>(sizeof(aclshmemx_uniqueid_t));
  return ACLSHMEM_SUCCESS;  // tessera-run wires the job: the id carries nothing
}

int aclshmemx_set_attr_uniqueid_args(int my_pe, int n_pes, int64_t local_mem_size, const aclshmemx_uniqueid_t* uid,
                                     aclshmemx_init_attr_t* attributes) {
  int rc = aclshmemx_set_attr(my_pe, n_pes, static_cast<uint64_t>(local_mem_size), nullptr, attributes);
  if (rc == ACLSHMEM_SUCCESS) attributes->comm_args = const_cast<aclshmemx_uniqueid_t*>(uid);
  return rc;
}

int aclshmemx_set_conf_store_tls(bool enable, const char* tls_info, uint32_t tls_info_len) {
  return ACLSHMEM_SUCCESS;  // the launcher's socket is local and authenticated by the job secret
}

int aclshmemx_init_attr(aclshmemx_bootstrap_t bootstrap_flags, aclshmemx_init_attr_t* attributes) {
  if (!attributes) {
    log::warn("aclshmemx_init_attr: attributes is a null pointer");
    return ACLSHMEM_INVALID_PARAM;
  }
  if (attributes->local_mem_size && !std::getenv("SHMEM_SYMMETRIC_SIZE") && !std::getenv("TESSERA_SYMMETRIC_SIZE"))
    setenv("TESSERA_SYMMETRIC_SIZE", std::to_string(attributes->local_mem_size).c_str(), 1);
  shmem_init();
  if (attributes->n_pes != shmem_n_pes() || attributes->my_pe != shmem_my_pe()) {
    log::warn("aclshmemx_init_attr: the attributes say PE {} of {}, but tessera-run started this process as PE {} "
              "of {}", attributes->my_pe, attributes->n_pes, shmem_my_pe(), shmem_n_pes());
    return ACLSHMEM_INVALID_PARAM;
  }
  return ACLSHMEM_SUCCESS;
}

int aclshmemx_init_status(void) {
  return pgas::is_initialized() ? ACLSHMEM_STATUS_IS_INITIALIZED : ACLSHMEM_STATUS_NOT_INITIALIZED;
}
int aclshmem_finalize(void) {
  shmem_finalize();
  return ACLSHMEM_SUCCESS;
}
void aclshmem_info_get_version(int* major, int* minor) { shmem_info_get_version(major, minor); }
void aclshmem_info_get_name(char* name) { shmem_info_get_name(name); }
void aclshmem_global_exit(int status) { shmem_global_exit(status); }
int aclshmem_my_pe(void) { return shmem_my_pe(); }
int aclshmem_n_pes(void) { return shmem_n_pes(); }

void* aclshmem_malloc(size_t size) { return shmem_malloc(size); }
void* aclshmem_calloc(size_t nmemb, size_t size) { return shmem_calloc(nmemb, size); }
void* aclshmem_align(size_t alignment, size_t size) { return shmem_align(alignment, size); }
void aclshmem_free(void* ptr) { shmem_free(ptr); }
void* aclshmem_ptr(void* ptr, int pe) { return shmem_ptr(ptr, pe); }

int aclshmem_team_split_strided(aclshmem_team_t parent, int start, int stride, int size, aclshmem_team_t* team) {
  return shmem_team_split_strided(parent, start, stride, size, nullptr, 0, team);
}
int aclshmem_team_split_2d(aclshmem_team_t parent, int x_range, aclshmem_team_t* x_team, aclshmem_team_t* y_team) {
  return shmem_team_split_2d(parent, x_range, nullptr, 0, x_team, nullptr, 0, y_team);
}
int aclshmem_team_translate_pe(aclshmem_team_t src, int src_pe, aclshmem_team_t dest) {
  return shmem_team_translate_pe(src, src_pe, dest);
}
void aclshmem_team_destroy(aclshmem_team_t team) { shmem_team_destroy(team); }
int aclshmem_team_my_pe(aclshmem_team_t team) { return shmem_team_my_pe(team); }
int aclshmem_team_n_pes(aclshmem_team_t team) { return shmem_team_n_pes(team); }
int aclshmem_team_get_config(aclshmem_team_t team, aclshmem_team_config_t* config) {
  return shmem_team_get_config(team, SHMEM_TEAM_NUM_CONTEXTS, config);
}

void aclshmem_putmem(void* dst, void* src, size_t bytes, int pe) { shmem_putmem(dst, src, bytes, pe); }
void aclshmem_getmem(void* dst, void* src, size_t bytes, int pe) { shmem_getmem(dst, src, bytes, pe); }
void aclshmem_putmem_nbi(void* dst, void* src, size_t bytes, int pe) { shmem_putmem_nbi(dst, src, bytes, pe); }
void aclshmem_getmem_nbi(void* dst, void* src, size_t bytes, int pe) { shmem_getmem_nbi(dst, src, bytes, pe); }
void aclshmem_putmem_signal(void* dst, void* src, size_t bytes, uint64_t* sig_addr, uint64_t signal, int sig_op,
                            int pe) {
  shmem_putmem_signal(dst, src, bytes, sig_addr, signal, sig_op, pe);
}
void aclshmem_putmem_signal_nbi(void* dst, void* src, size_t bytes, uint64_t* sig_addr, uint64_t signal,
                                int sig_op, int pe) {
  shmem_putmem_signal_nbi(dst, src, bytes, sig_addr, signal, sig_op, pe);
}
uint64_t aclshmem_signal_wait_until(uint64_t* sig_addr, int cmp, uint64_t cmp_value) {
  return shmem_signal_wait_until(sig_addr, cmp, cmp_value);
}
void aclshmem_fence(void) { shmem_fence(); }
void aclshmem_quiet(void) { shmem_quiet(); }
void aclshmem_barrier_all(void) { shmem_barrier_all(); }
void aclshmem_barrier(aclshmem_team_t team) {
  shmem_quiet();
  shmem_team_sync(team);
}

// CANN's type names are OpenSHMEM TYPENAMEs: each forwards to the typed routine (same checks, same messages).
#define TS_DEF_ACL(NAME, T)                                                                                   \
  void aclshmem_put_##NAME##_mem(T* dest, T* source, size_t nelems, int pe) {                                 \
    shmem_##NAME##_put(dest, source, nelems, pe);                                                             \
  }                                                                                                           \
  void aclshmem_get_##NAME##_mem(T* dest, T* source, size_t nelems, int pe) {                                 \
    shmem_##NAME##_get(dest, source, nelems, pe);                                                             \
  }                                                                                                           \
  void aclshmem_put_##NAME##_mem_nbi(T* dest, T* source, size_t nelems, int pe) {                             \
    shmem_##NAME##_put_nbi(dest, source, nelems, pe);                                                         \
  }                                                                                                           \
  void aclshmem_get_##NAME##_mem_nbi(T* dest, T* source, size_t nelems, int pe) {                             \
    shmem_##NAME##_get_nbi(dest, source, nelems, pe);                                                         \
  }                                                                                                           \
  void aclshmem_##NAME##_p(T* dst, const T value, int pe) { shmem_##NAME##_p(dst, value, pe); }               \
  T aclshmem_##NAME##_g(T* src, int pe) { return shmem_##NAME##_g(src, pe); }
TESSERA_ACL_TYPES(TS_DEF_ACL)

}  // extern "C"
