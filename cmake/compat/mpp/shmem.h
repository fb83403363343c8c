/* SGI SHMEM header location (deprecated, still supported by OpenSHMEM 1.5): #include <mpp/shmem.h>. */
#include <shmem.h>
