// The bytes of one channel of a CUDA array's element, by format: what the stand-in driver lays
// arrays out with and the stand-in runtime counts 3D copies' extents in (both libraries: one list).
#pragma once

#include <cuda.h>

#include <cstddef>

namespace standin {

inline std::size_t formatBytes(CUarray_format f) {
  switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF: return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT: return 4;
    default: return 0;  // the others (compressed, video formats) are not modelled
  }
}

}  // namespace standin
