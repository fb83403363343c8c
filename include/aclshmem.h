/* Host-side names of Huawei CANN SHMEM (aclshmem_* / aclshmemx_*) mapped onto Tessera's OpenSHMEM API, so host
 * code written for Ascend ports by recompiling (with tessera-c++ / tessera-cc) and runs under tessera-run.
 *
 * Covered (see docs/openshmem.md for the table): initialisation with attributes (aclshmemx_init_attr and the
 * attribute/uniqueid helpers; bootstrap comes from tessera-run, so ip_port and uniqueids are accepted and not
 * needed), init status, finalize, version/name, global_exit, my_pe/n_pes, malloc/calloc/align/free/ptr, teams
 * (split_strided, split_2d, translate_pe, destroy, team_my_pe/n_pes, get_config), host put/get (mem, typed,
 * nbi, p/g), put-with-signal, signal wait, fence/quiet, barrier_all and team barrier. Not covered: device-side
 * (AI Core) APIs, stream-ordered (*_on_stream) forms, TLS key callbacks beyond accepting them.
 * Semantics are Tessera's (shmem.h): every call is complete on return, bad arguments end the job with a
 * message. Functions return ACLSHMEM_SUCCESS (0) or a negative aclshmem_error_code_t. */
#ifndef TESSERA_ACLSHMEM_H
#define TESSERA_ACLSHMEM_H

#include <shmem.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ACLSHMEM_HOST_API __attribute__((visibility("default")))
#define ACLSHMEM_MAJOR_VERSION 1
#define ACLSHMEM_MINOR_VERSION 1
#define ACLSHMEM_MAX_NAME_LEN 256
#define ACLSHMEM_MAX_IP_PORT_LEN 64
#define ACLSHMEM_UNIQUE_ID_INNER_LEN 124

enum aclshmem_error_code_t {
  ACLSHMEM_SUCCESS = 0,
  ACLSHMEM_INVALID_PARAM = -1,
  ACLSHMEM_INVALID_VALUE = -2,
  ACLSHMEM_SMEM_ERROR = -3,
  ACLSHMEM_INNER_ERROR = -4,
  ACLSHMEM_NOT_INITED = -5,
  ACLSHMEM_BOOTSTRAP_ERROR = -6,
  ACLSHMEM_TIMEOUT_ERROR = -7,
  ACLSHMEM_MALLOC_FAILED = -8,
  ACLSHMEM_NOT_SUPPORTED = -100
};
typedef int aclshmemx_bootstrap_t;
#define ACLSHMEMX_INIT_WITH_DEFAULT (1 << 0)
#define ACLSHMEMX_INIT_WITH_MPI (1 << 1)
#define ACLSHMEMX_INIT_WITH_UNIQUEID (1 << 3)

enum aclshmemx_init_status_t {
  ACLSHMEM_STATUS_NOT_INITIALIZED = 0,
  ACLSHMEM_STATUS_SHM_CREATED = 1,
  ACLSHMEM_STATUS_IS_INITIALIZED = 2,
  ACLSHMEM_STATUS_INVALID = 0x7fffffff
};

typedef int data_op_engine_type_t;
#define ACLSHMEM_DATA_OP_MTE 0x1
#define ACLSHMEM_DATA_OP_SDMA 0x2
#define ACLSHMEM_DATA_OP_ROCE 0x4
#define ACLSHMEM_DATA_OP_UDMA 0x8

typedef struct {
  int version;
  data_op_engine_type_t data_op_engine_type;
  uint32_t shm_init_timeout;
  uint32_t shm_create_timeout;
  uint32_t control_operation_timeout;
  int32_t sockFd;
} aclshmem_init_optional_attr_t;

typedef struct {
  int my_pe;
  int n_pes;
  char ip_port[ACLSHMEM_MAX_IP_PORT_LEN];
  uint64_t local_mem_size;  /* symmetric heap bytes per PE; used when SHMEM_SYMMETRIC_SIZE is not set */
  aclshmem_init_optional_attr_t option_attr;
  void* comm_args;
  uint64_t instance_id;
} aclshmemx_init_attr_t;

typedef struct {
  int32_t version;
  int my_pe;
  int n_pes;
  char internal[ACLSHMEM_UNIQUE_ID_INNER_LEN];
} aclshmemx_uniqueid_t;

typedef shmem_team_t aclshmem_team_t;
typedef shmem_team_config_t aclshmem_team_config_t;
#define ACLSHMEM_TEAM_WORLD SHMEM_TEAM_WORLD
#define ACLSHMEM_TEAM_INVALID SHMEM_TEAM_INVALID
#define ACLSHMEM_SIGNAL_SET SHMEM_SIGNAL_SET
#define ACLSHMEM_SIGNAL_ADD SHMEM_SIGNAL_ADD
#define ACLSHMEM_CMP_EQ SHMEM_CMP_EQ
#define ACLSHMEM_CMP_NE SHMEM_CMP_NE
#define ACLSHMEM_CMP_GT SHMEM_CMP_GT
#define ACLSHMEM_CMP_GE SHMEM_CMP_GE
#define ACLSHMEM_CMP_LT SHMEM_CMP_LT
#define ACLSHMEM_CMP_LE SHMEM_CMP_LE

/* ---- Initialisation and query ---- */
ACLSHMEM_HOST_API int aclshmemx_set_attr(int my_pe, int n_pes, uint64_t local_mem_size, const char* ip_port,
                                         aclshmemx_init_attr_t* attributes);
ACLSHMEM_HOST_API int aclshmemx_get_uniqueid(aclshmemx_uniqueid_t* uid);
ACLSHMEM_HOST_API int aclshmemx_set_attr_uniqueid_args(int my_pe, int n_pes, int64_t local_mem_size,
                                                       const aclshmemx_uniqueid_t* uid,
                                                       aclshmemx_init_attr_t* attributes);
ACLSHMEM_HOST_API int aclshmemx_set_conf_store_tls(bool enable, const char* tls_info, uint32_t tls_info_len);
ACLSHMEM_HOST_API int aclshmemx_init_attr(aclshmemx_bootstrap_t bootstrap_flags, aclshmemx_init_attr_t* attributes);
ACLSHMEM_HOST_API int aclshmemx_init_status(void);
ACLSHMEM_HOST_API int aclshmem_finalize(void);
ACLSHMEM_HOST_API void aclshmem_info_get_version(int* major, int* minor);
ACLSHMEM_HOST_API void aclshmem_info_get_name(char* name);
ACLSHMEM_HOST_API void aclshmem_global_exit(int status);
ACLSHMEM_HOST_API int aclshmem_my_pe(void);
ACLSHMEM_HOST_API int aclshmem_n_pes(void);

/* ---- Memory ---- */
ACLSHMEM_HOST_API void* aclshmem_malloc(size_t size);
ACLSHMEM_HOST_API void* aclshmem_calloc(size_t nmemb, size_t size);
ACLSHMEM_HOST_API void* aclshmem_align(size_t alignment, size_t size);
ACLSHMEM_HOST_API void aclshmem_free(void* ptr);
ACLSHMEM_HOST_API void* aclshmem_ptr(void* ptr, int pe);

/* ---- Teams ---- */
ACLSHMEM_HOST_API int aclshmem_team_split_strided(aclshmem_team_t parent_team, int pe_start, int pe_stride,
                                                  int pe_size, aclshmem_team_t* new_team);
ACLSHMEM_HOST_API int aclshmem_team_split_2d(aclshmem_team_t parent_team, int x_range, aclshmem_team_t* x_team,
                                             aclshmem_team_t* y_team);
ACLSHMEM_HOST_API int aclshmem_team_translate_pe(aclshmem_team_t src_team, int src_pe, aclshmem_team_t dest_team);
ACLSHMEM_HOST_API void aclshmem_team_destroy(aclshmem_team_t team);
ACLSHMEM_HOST_API int aclshmem_team_my_pe(aclshmem_team_t team);
ACLSHMEM_HOST_API int aclshmem_team_n_pes(aclshmem_team_t team);
ACLSHMEM_HOST_API int aclshmem_team_get_config(aclshmem_team_t team, aclshmem_team_config_t* config);

/* ---- Host RMA, signals, ordering, barriers ---- */
ACLSHMEM_HOST_API void aclshmem_putmem(void* dst, void* src, size_t bytes, int pe);
ACLSHMEM_HOST_API void aclshmem_getmem(void* dst, void* src, size_t bytes, int pe);
ACLSHMEM_HOST_API void aclshmem_putmem_nbi(void* dst, void* src, size_t bytes, int pe);
ACLSHMEM_HOST_API void aclshmem_getmem_nbi(void* dst, void* src, size_t bytes, int pe);
ACLSHMEM_HOST_API void aclshmem_putmem_signal(void* dst, void* src, size_t bytes, uint64_t* sig_addr,
                                              uint64_t signal, int sig_op, int pe);
ACLSHMEM_HOST_API void aclshmem_putmem_signal_nbi(void* dst, void* src, size_t bytes, uint64_t* sig_addr,
                                                  uint64_t signal, int sig_op, int pe);
ACLSHMEM_HOST_API uint64_t aclshmem_signal_wait_until(uint64_t* sig_addr, int cmp, uint64_t cmp_value);
ACLSHMEM_HOST_API void aclshmem_fence(void);
ACLSHMEM_HOST_API void aclshmem_quiet(void);
ACLSHMEM_HOST_API void aclshmem_barrier_all(void);
ACLSHMEM_HOST_API void aclshmem_barrier(aclshmem_team_t team);

/* Typed host put/get (aclshmem_put_<name>_mem, ..._nbi, aclshmem_<name>_p/_g) for CANN's host type list. */
#define TESSERA_ACL_TYPES(X)                                                                              \
  X(float, float) X(double, double) X(int8, int8_t) X(int16, int16_t) X(int32, int32_t) X(int64, int64_t)\
  X(uint8, uint8_t) X(uint16, uint16_t) X(uint32, uint32_t) X(uint64, uint64_t) X(char, char)
#define TESSERA_ACL_DECL(NAME, T)                                                                         \
  ACLSHMEM_HOST_API void aclshmem_put_##NAME##_mem(T* dest, T* source, size_t nelems, int pe);           \
  ACLSHMEM_HOST_API void aclshmem_get_##NAME##_mem(T* dest, T* source, size_t nelems, int pe);           \
  ACLSHMEM_HOST_API void aclshmem_put_##NAME##_mem_nbi(T* dest, T* source, size_t nelems, int pe);       \
  ACLSHMEM_HOST_API void aclshmem_get_##NAME##_mem_nbi(T* dest, T* source, size_t nelems, int pe);       \
  ACLSHMEM_HOST_API void aclshmem_##NAME##_p(T* dst, const T value, int pe);                             \
  ACLSHMEM_HOST_API T aclshmem_##NAME##_g(T* src, int pe);
TESSERA_ACL_TYPES(TESSERA_ACL_DECL)
#undef TESSERA_ACL_DECL

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_ACLSHMEM_H */
