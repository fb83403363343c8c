/* The rest of the OpenSHMEM C API (collectives, locks, deprecated forms, C11 generic bindings) is declared
 * here as it lands. */
#ifndef TESSERA_SHMEM_EXTRA_H
#define TESSERA_SHMEM_EXTRA_H
#endif
