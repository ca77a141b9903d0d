/* cuda_backend.h - what the CUDA backend exports besides rt_backend_cuda()
 * (declared in runtime/backend.h). Present when MGC_HAVE_CUDA is defined. */
#ifndef MGC_CUDA_BACKEND_H
#define MGC_CUDA_BACKEND_H

#include <stddef.h>

/* Number of usable CUDA devices; 0 with a one-line reason in why
 * ("no usable CUDA device (cudaGetDeviceCount: ...)") when there is none. */
int rt_cuda_device_count(char *why, size_t cap);

#endif
