// Bootstrap through PMIx: a job started by mpirun (Open MPI), srun (Slurm) or any PMIx-enabled launcher.
// Rank and size come from the PMIx server; records are exchanged with PMIx_Put/Commit/Fence/Get; rank 0
// draws the job's random id and publishes it. There is no tessera-run here, so the job control segment is
// made by rank 0 (JobInfo::control_name stays empty; see pgas init), and when a PE dies the launcher ends
// the others (mpirun and srun do so by default).
#include <pmix.h>
#include <sys/random.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "bootstrap/bootstrap.h"
#include "sync/wait.h"

namespace tessera::bootstrap {
namespace {
pmix_proc_t g_me;
pmix_proc_t g_all;
int g_size = 1;
uint64_t g_round = 0;
bool g_up = false;      // PMIx_Init done and not finalized
uint64_t g_inits = 0;   // inits in this process: the job id's key of each (every PE initializes in step)

bool detect() { return std::getenv("PMIX_RANK") != nullptr && std::getenv("PMIX_NAMESPACE") != nullptr; }

Status pmix_error(const char* what, pmix_status_t rc) {
  return make_status(Code::kInternal, "bootstrap (PMIx): {} failed: {}", what, PMIx_Error_string(rc));
}

// Fence over the whole job, collecting the data put before it, with the job's wait deadline.
Status fence(bool collect) {
  pmix_info_t info[2];
  bool yes = true;
  int timeout_s = static_cast<int>(std::min<uint64_t>(sync::timeout_ns() / 1'000'000'000, 1 << 30));
  if (timeout_s < 1) timeout_s = 1;
  PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
  PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &timeout_s, PMIX_INT);
  pmix_status_t rc = PMIx_Fence(&g_all, 1, collect ? info : info + 1, collect ? 2 : 1);
  PMIX_INFO_DESTRUCT(&info[0]);
  PMIX_INFO_DESTRUCT(&info[1]);
  if (rc != PMIX_SUCCESS) return pmix_error("PMIx_Fence (a PE did not arrive in time?)", rc);
  return Status::ok();
}

Status put_bytes(const std::string& key, const void* data, size_t bytes) {
  pmix_value_t v;
  PMIX_VALUE_CONSTRUCT(&v);
  v.type = PMIX_BYTE_OBJECT;
  v.data.bo.bytes = static_cast<char*>(const_cast<void*>(data));
  v.data.bo.size = bytes;
  pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key.c_str(), &v);
  if (rc != PMIX_SUCCESS) return pmix_error("PMIx_Put", rc);
  rc = PMIx_Commit();
  if (rc != PMIX_SUCCESS) return pmix_error("PMIx_Commit", rc);
  return Status::ok();
}

Status get_bytes(int rank, const std::string& key, void* out, size_t bytes) {
  pmix_proc_t p;
  PMIX_PROC_CONSTRUCT(&p);
  PMIX_LOAD_PROCID(&p, g_me.nspace, static_cast<pmix_rank_t>(rank));
  pmix_value_t* v = nullptr;
  pmix_status_t rc = PMIx_Get(&p, key.c_str(), nullptr, 0, &v);
  if (rc != PMIX_SUCCESS) return pmix_error(("PMIx_Get of " + key).c_str(), rc);
  Status st = Status::ok();
  if (v->type != PMIX_BYTE_OBJECT || v->data.bo.size != bytes)
    st = make_status(Code::kInternal, "bootstrap (PMIx): {} from rank {} has {} bytes, expected {}", key, rank,
                     v->type == PMIX_BYTE_OBJECT ? v->data.bo.size : 0, bytes);
  else if (bytes)
    std::memcpy(out, v->data.bo.bytes, bytes);  // copy-ok: start-up exchange
  PMIX_VALUE_RELEASE(v);
  return st;
}

// The client stays connected from the first init to the process's exit, across shmem_finalize: a PE
// that initializes again after its last finalize (OpenSHMEM 1.6) must not look finalized to the PMIx
// server meanwhile, or the others' fences complete without it (PMIX_ERR_PARTIAL_SUCCESS).
// A child forked by the program inherits the handler but not the connection's ownership: it leaves it.
pid_t g_pid = -1;
void finalize_at_exit() {
  if (g_up && ::getpid() == g_pid) PMIx_Finalize(nullptr, 0);
  g_up = false;
}

Status init(JobInfo* out) {
  pmix_status_t rc = PMIX_SUCCESS;
  if (!g_up) {
    rc = PMIx_Init(&g_me, nullptr, 0);
    if (rc != PMIX_SUCCESS) return pmix_error("PMIx_Init", rc);
    g_up = true;
    g_pid = ::getpid();
    std::atexit(finalize_at_exit);
  }
  PMIX_PROC_CONSTRUCT(&g_all);
  PMIX_LOAD_PROCID(&g_all, g_me.nspace, PMIX_RANK_WILDCARD);
  pmix_value_t* v = nullptr;
  rc = PMIx_Get(&g_all, PMIX_JOB_SIZE, nullptr, 0, &v);
  if (rc != PMIX_SUCCESS) return pmix_error("PMIx_Get(job size)", rc);
  g_size = static_cast<int>(v->data.uint32);
  PMIX_VALUE_RELEASE(v);
  JobInfo info;
  info.rank = static_cast<int>(g_me.rank);
  info.size = g_size;
  if (info.rank < 0 || info.rank >= g_size)
    return make_status(Code::kInternal, "bootstrap (PMIx): rank {} outside a job of {}", info.rank, g_size);
  // The job id names shared-memory objects: random, drawn by rank 0 at every init, under a key of its own
  // (a client may answer a Get of a key it has read before from its cache).
  const std::string key = "tessera.job_id." + std::to_string(g_inits++);
  char id[17] = {};
  if (info.rank == 0) {
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, 0) != sizeof r) return sys_error("bootstrap (PMIx): getrandom");
    std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(r));
    TS_RETURN_IF_ERROR(put_bytes(key, id, 16));
  }
  TS_RETURN_IF_ERROR(fence(true));
  if (info.rank != 0) TS_RETURN_IF_ERROR(get_bytes(0, key, id, 16));
  info.job_id = std::string(id, 16);
  *out = info;
  return Status::ok();
}

Status allgather(const void* mine, void* all, size_t bytes) {
  std::string key = "tessera.ag." + std::to_string(g_round++);
  TS_RETURN_IF_ERROR(put_bytes(key, mine, bytes));
  TS_RETURN_IF_ERROR(fence(true));
  for (int r = 0; r < g_size; ++r)
    TS_RETURN_IF_ERROR(get_bytes(r, key, static_cast<char*>(all) + static_cast<size_t>(r) * bytes, bytes));
  return Status::ok();
}

Status barrier() { return fence(false); }

// shmem_finalize: the client stays up (finalize_at_exit).
void finalize() {}
}  // namespace

const Backend kPmixBackend{"pmix", detect, init, allgather, barrier, finalize};

}  // namespace tessera::bootstrap
