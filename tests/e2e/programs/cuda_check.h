/* The test programs' check of a CUDA call: a failure is printed with its error's name and
 * counted in `failures`, which the program's exit status reports. */
#pragma once

#include <cuda.h>
#include <stdio.h>

static int failures = 0;

static void check(CUresult rc, const char* what) {
  if (rc != CUDA_SUCCESS) {
    const char* name = "?";
    cuGetErrorName(rc, &name);
    fprintf(stderr, "%s failed: %s\n", what, name);
    ++failures;
  }
}

#ifdef CUDART_VERSION
static void checkRuntime(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) {
    fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorName(rc));
    ++failures;
  }
}
#endif
